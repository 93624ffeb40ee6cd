import { css, html, LitElement, nothing } from 'lit';
import type { LocalAPI, LoadProgress, ModelCandidate } from '../client/index.ts';
import { candidateKey, isModelCached, isModelRemovable, removeCachedModel } from '../client/index.ts';
import { panelStyles } from './styles.ts';

interface ModelRow {
  id: string;
  task: string;
  candidates: ModelCandidate[];
  cached: boolean[];
}

const size = (bytes?: number) =>
  bytes === undefined ? '' : bytes >= 1e9 ? `${(bytes / 1e9).toFixed(1)} GB` : `${Math.round(bytes / 1e6)} MB`;

/**
 * Each public model ID: the fallback chain this device will try, what it loaded (engine, device, size), download and
 * load progress, whether each candidate is cached, and a way to remove it from the cache.
 */
export class ModelsPanel extends LitElement {
  static override styles = [
    panelStyles,
    css`
      .models {
        display: grid;
        gap: 0.75rem;
      }
      .models ol {
        margin: 0.25rem 0 0;
        padding-left: 1.25rem;
      }
      .models li {
        margin: 0.2rem 0;
      }
      .loaded {
        font-weight: 700;
      }
      progress {
        width: 100%;
      }
      .tag {
        font-size: 0.75rem;
        border: 1px solid var(--border);
        border-radius: 999px;
        padding: 0 0.45rem;
        margin-left: 0.35rem;
      }
    `,
  ];
  static override properties = {
    lantern: { attribute: false },
    rows: { state: true },
    loaded: { state: true },
    progress: { state: true },
    message: { state: true },
  };

  declare lantern: LocalAPI | undefined;
  declare rows: ModelRow[];
  /** Public ID → the candidate key that loaded. */
  declare loaded: Record<string, string>;
  /** Public ID → loading progress, 0–100. */
  declare progress: Record<string, number>;
  declare message: string;
  #listening = false;

  constructor() {
    super();
    this.rows = [];
    this.loaded = {};
    this.progress = {};
    this.message = '';
  }

  override updated(changed: Map<string, unknown>) {
    if (changed.has('lantern') && this.lantern && !this.#listening) {
      this.#listening = true;
      this.lantern.addEventListener('progress', (event) => this.#onProgress(event.detail));
      this.lantern.addEventListener('device', () => void this.refresh());
      void this.refresh();
    }
  }

  /** Reads the chains and cache state again. */
  async refresh() {
    if (!this.lantern) return;
    const models = await this.lantern.models();
    this.rows = await Promise.all(
      models.map(async (m) => ({ ...m, cached: await Promise.all(m.candidates.map((c) => isModelCached(c))) })),
    );
  }

  #onProgress(progress: LoadProgress) {
    if (progress.status === 'ready') {
      this.loaded = { ...this.loaded, [progress.model]: progress.resolved };
      this.progress = { ...this.progress, [progress.model]: 100 };
      void this.refresh();
    } else if (progress.status === 'progress_total' || progress.status === 'progress') {
      this.progress = { ...this.progress, [progress.model]: Math.round(progress.progress) };
    } else if (progress.status === 'initiate' && this.progress[progress.model] === undefined) {
      this.progress = { ...this.progress, [progress.model]: 0 };
    }
  }

  override render() {
    const device = this.lantern?.device;
    return html`
      <h2>Models</h2>
      <p class="hint">
        Each ID runs the first candidate this device can run
        (${device ? html`<strong>${device.device}</strong>${device.shaderF16 ? ', shader-f16' : ', no shader-f16'}` : '…'}).
        Models load on first use.
      </p>
      <p role="status" aria-live="polite">${this.message}</p>
      <div class="models">${this.rows.map((row) => this.#row(row))}</div>
      <div class="row" style="margin-top:1rem">
        <button type="button" class="secondary" @click=${this.#unload}>Unload all models</button>
      </div>
    `;
  }

  #row(row: ModelRow) {
    const loaded = this.loaded[row.id];
    const progress = this.progress[row.id];
    return html`<section class="card" aria-label=${row.id}>
      <h3><code>${row.id}</code> <span class="tag">${row.task}</span></h3>
      ${
        progress !== undefined && progress < 100
          ? html`<label for=${`progress-${row.id}`}>Loading ${row.id}</label>
              <progress id=${`progress-${row.id}`} max="100" .value=${progress}>${progress}%</progress>`
          : nothing
      }
      ${
        row.candidates.length === 0
          ? html`<p class="hint">Cannot run on this device.</p>`
          : html`<ol>
              ${row.candidates.map((c, i) => {
                const key = candidateKey(c);
                return html`<li class=${key === loaded ? 'loaded' : ''}>
                  ${c.engine === 'web-llm' ? 'web-llm' : `transformers.js · ${c.device} · ${c.dtype ?? 'default'}`}
                  <code>${c.model}</code> ${size(c.downloadBytes)}
                  ${key === loaded ? html`<span class="tag">loaded</span>` : nothing}
                  <span class="tag">${row.cached[i] ? 'cached' : 'not cached'}</span>
                  ${
                    row.cached[i] && isModelRemovable(c)
                      ? html`<button type="button" class="secondary" @click=${() => this.#remove(c)}>
                          Remove from cache
                        </button>`
                      : nothing
                  }
                </li>`;
              })}
            </ol>`
      }
    </section>`;
  }

  async #remove(candidate: ModelCandidate) {
    const removed = await removeCachedModel(candidate);
    this.message = `Removed ${removed} cached files of ${candidate.model}.`;
    await this.refresh();
  }

  #unload() {
    this.lantern?.restartEngine('unloaded from the playground');
    this.loaded = {};
    this.progress = {};
    this.message = 'Models unloaded: they load again on their next use.';
  }
}

customElements.define('models-panel', ModelsPanel);
