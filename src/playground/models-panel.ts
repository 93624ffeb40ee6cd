import { css, html, LitElement, nothing } from 'lit';
import type { LocalAPI, LoadProgress, ModelCandidate, RemoteCandidate } from '../client/index.ts';
import { candidateKey, isModelCached, isModelRemovable, removeCachedModel } from '../client/index.ts';
import { allowOnce, forgetServer, parseServer, rememberedServers, rememberServer, shownURL } from './server-consent.ts';
import { panelStyles } from './styles.ts';

interface ModelRow {
  id: string;
  task: string;
  candidates: ModelCandidate[];
  /** The candidate that answered its last request; null before any. */
  servedBy: string | null;
  cached: boolean[];
}

const size = (bytes?: number) =>
  bytes === undefined ? '' : bytes >= 1e9 ? `${(bytes / 1e9).toFixed(1)} GB` : `${Math.round(bytes / 1e6)} MB`;

/**
 * Each public model ID: the fallback chain this device will try (local models and remote servers, in the policy's
 * order), which candidate answers it, what it loaded (engine, device, size), download and load progress, whether each
 * local candidate is cached, and a way to remove it from the cache. A form adds an OpenAI-compatible server to the
 * chat models' chains (it reloads the page with `?remote=…`): the person typing it in is their yes to sending chats
 * there (server-consent.ts), so the form shows the origin they go to before they press the button.
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
      .choice {
        display: flex;
        gap: 0.4rem;
        align-items: center;
        margin-top: 0.5rem;
      }
      .choice input {
        width: auto;
      }
      .choice label {
        margin: 0;
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
    serverInput: { state: true },
    remembered: { state: true },
  };

  declare lantern: LocalAPI | undefined;
  declare rows: ModelRow[];
  /** Public ID → the candidate key that loaded. */
  declare loaded: Record<string, string>;
  /** Public ID → loading progress, 0–100. */
  declare progress: Record<string, number>;
  declare message: string;
  /** What the server form's Base URL field holds, to show where chats would go. */
  declare serverInput: string;
  /** The servers remembered in this browser (used without asking). */
  declare remembered: string[];
  #listening = false;

  constructor() {
    super();
    this.rows = [];
    this.loaded = {};
    this.progress = {};
    this.message = '';
    this.serverInput = new URLSearchParams(location.search).get('remote') ?? '';
    this.remembered = rememberedServers();
  }

  override updated(changed: Map<string, unknown>) {
    if (changed.has('lantern') && this.lantern && !this.#listening) {
      this.#listening = true;
      this.lantern.addEventListener('progress', (event) => this.#onProgress(event.detail));
      this.lantern.addEventListener('device', () => void this.refresh());
      this.lantern.addEventListener('served', () => void this.refresh());
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
      ${this.#serverForm()}
    `;
  }

  #serverForm() {
    const params = new URLSearchParams(location.search);
    return html`<form class="card" style="margin-top:1rem" @submit=${this.#useServer}>
      <h3>A server for when this device cannot serve</h3>
      <p class="hint">
        An OpenAI-compatible server (vLLM, Ollama, llama.cpp, your backend) as one more candidate of each chat model.
        Prefer a path of your own backend: a server on another origin must allow this one (CORS). Using a server sends
        it your chats.
      </p>
      <div class="row">
        <label>
          Base URL
          <input
            name="remote"
            .value=${params.get('remote') ?? ''}
            placeholder="/api/llm/v1"
            aria-describedby="server-destination"
            @input=${(e: Event) => (this.serverInput = (e.target as HTMLInputElement).value)}
          />
        </label>
        <label>
          Model on the server
          <input name="remoteModel" .value=${params.get('remoteModel') ?? ''} placeholder="llama3.2" />
        </label>
        <label>
          Policy
          <select name="policy">
            ${(['local-first', 'remote-first', 'local-only'] as const).map(
              (p) => html`<option value=${p} ?selected=${(params.get('policy') ?? 'local-first') === p}>${p}</option>`,
            )}
          </select>
        </label>
        <button type="submit">Use it</button>
      </div>
      <p class="hint" id="server-destination">${this.#destination()}</p>
      <div class="choice">
        <input id="remember-server-here" name="remember" type="checkbox" />
        <label for="remember-server-here">Remember this server (links naming it are then used without asking)</label>
      </div>
      ${
        this.remembered.length
          ? html`<h4>Remembered servers</h4>
              <ul aria-label="Remembered servers">
                ${this.remembered.map(
                  (server) =>
                    html`<li>
                      <code>${this.#shown(server)}</code>
                      <button type="button" class="secondary" @click=${() => this.#forget(server)}>Forget</button>
                    </li>`,
                )}
              </ul>`
          : nothing
      }
    </form>`;
  }

  /** Where chats would go with what the Base URL field holds: its origin, the part a person can judge. */
  #destination() {
    const value = this.serverInput.trim();
    if (!value) return 'No server: chats stay in this browser.';
    const url = parseServer(value, location.href);
    if (!url) return 'Not an http(s) URL.';
    return html`Chats would go to
      <strong>${url.origin}</strong>${url.origin === location.origin ? ' (this site)' : ''}.`;
  }

  #shown(server: string) {
    const url = parseServer(server, location.href);
    return url ? shownURL(url) : server;
  }

  #forget(server: string) {
    forgetServer(server);
    this.remembered = rememberedServers();
    this.message = `Forgotten: a link naming ${this.#shown(server)} asks again.`;
  }

  #useServer(event: SubmitEvent) {
    event.preventDefault();
    const form = new FormData(event.target as HTMLFormElement);
    const remote = String(form.get('remote') ?? '').trim();
    const server = remote ? parseServer(remote, location.href) : undefined;
    if (remote && !server) {
      this.message = `${remote} is not an http(s) URL.`;
      return;
    }
    // Set here, by the person, with its origin shown: their yes for the load this starts (or every load, remembered).
    if (server) {
      if (form.get('remember')) rememberServer(server.href);
      else allowOnce(server.href);
    }
    const url = new URL(location.href);
    for (const name of ['remote', 'remoteModel', 'policy']) {
      const value = String(form.get(name) ?? '').trim();
      if (value) url.searchParams.set(name, value);
      else url.searchParams.delete(name);
    }
    location.assign(url);
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
                const serving =
                  key === row.servedBy
                    ? html`<span class="tag">answers now</span>`
                    : row.servedBy === null && i === 0
                      ? html`<span class="tag">first in line</span>`
                      : nothing;
                if (c.engine === 'remote') return this.#remoteItem(c, serving);
                return html`<li class=${key === loaded ? 'loaded' : ''}>
                  ${c.engine === 'web-llm' ? 'web-llm' : `transformers.js · ${c.device} · ${c.dtype ?? 'default'}`}
                  <code>${c.model}</code> ${size(c.downloadBytes)}
                  ${key === loaded ? html`<span class="tag">loaded</span>` : nothing} ${serving}
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

  #remoteItem(c: RemoteCandidate, serving: unknown) {
    return html`<li class=${serving === nothing ? '' : 'loaded'}>
      remote server <code>${c.model}</code> at <code>${candidateKey(c).replace(/^remote:[^@]*@/, '')}</code>
      ${serving}
    </li>`;
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
