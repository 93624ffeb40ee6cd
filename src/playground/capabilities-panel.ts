import { html, LitElement } from 'lit';
import type { LocalAPI } from '../client/index.ts';
import { panelStyles } from './styles.ts';

interface Capabilities {
  adapter: string;
  shaderF16: string;
  maxBuffer: string;
  isolated: string;
  storage: string;
  serviceWorker: string;
  engine: string;
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB`;

/** What this browser offers Lantern: WebGPU, shader-f16, cross-origin isolation, storage, who hosts the engine. */
export class CapabilitiesPanel extends LitElement {
  static override styles = [panelStyles];
  static override properties = { lantern: { attribute: false }, info: { state: true } };

  declare lantern: LocalAPI | undefined;
  declare info: Capabilities | undefined;

  override updated(changed: Map<string, unknown>) {
    if (changed.has('lantern') && this.lantern) {
      this.lantern.addEventListener('device', () => void this.refresh());
      this.lantern.addEventListener('host', () => void this.refresh());
      void this.refresh();
    }
  }

  async refresh() {
    const gpu = (navigator as Navigator & { gpu?: GPU }).gpu;
    // Asked for as the engines ask for theirs: a default request can describe another GPU of the machine.
    const adapter = gpu ? await gpu.requestAdapter({ powerPreference: 'high-performance' }).catch(() => null) : null;
    const estimate = await navigator.storage?.estimate?.();
    const device = this.lantern?.device;
    this.info = {
      adapter: adapter
        ? ([adapter.info.vendor, adapter.info.architecture, adapter.info.description].filter(Boolean).join(' · ') ||
            'yes') + (adapter.info.isFallbackAdapter ? ' (fallback adapter: WebGPU in software, on the CPU)' : '')
        : gpu
          ? 'none (WebGPU exists, but no adapter)'
          : 'none (no WebGPU in this browser)',
      shaderF16: adapter ? (adapter.features.has('shader-f16') ? 'yes' : 'no') : '–',
      maxBuffer: adapter ? mb(adapter.limits.maxBufferSize) : '–',
      isolated: crossOriginIsolated ? 'yes (threads and memory measurement available)' : 'no',
      storage: estimate?.quota ? `${mb(estimate.usage ?? 0)} used of ${mb(estimate.quota)}` : 'unknown',
      serviceWorker: navigator.serviceWorker.controller
        ? `controlling this page (${navigator.serviceWorker.controller.state})`
        : 'not controlling',
      engine: `${device ? device.device : 'starting'} · hosted by ${this.lantern?.isHost ? 'this tab' : 'another tab'}`,
    };
  }

  override render() {
    const info = this.info;
    const rows: [string, string | undefined][] = [
      ['WebGPU adapter', info?.adapter],
      ['shader-f16', info?.shaderF16],
      ['Largest GPU buffer', info?.maxBuffer],
      ['Cross-origin isolation', info?.isolated],
      ['Storage', info?.storage],
      ['Service worker', info?.serviceWorker],
      ['Engine', info?.engine],
    ];
    return html`
      <h2>Capabilities</h2>
      <table aria-label="Capabilities of this browser">
        <tbody>
          ${rows.map(
            ([name, value]) =>
              html`<tr>
                <th scope="row">${name}</th>
                <td>${value ?? '…'}</td>
              </tr>`,
          )}
        </tbody>
      </table>
      <div class="row" style="margin-top:0.75rem">
        <button type="button" class="secondary" @click=${() => this.refresh()}>Refresh</button>
      </div>
    `;
  }
}

customElements.define('capabilities-panel', CapabilitiesPanel);
