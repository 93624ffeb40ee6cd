import { css, html, LitElement, nothing } from 'lit';
import type {
  LocalAPI,
  LoadProgress,
  ModelChoice,
  RemoteCandidate,
  RunsOn,
  StorageReport,
  StoredModel,
  StoredModelEntry,
} from '../client/index.ts';
import { candidateKey, candidateLabel, describeStored, isRemote } from '../client/index.ts';
import { allowOnce, forgetServer, parseServer, rememberedServers, rememberServer, shownURL } from './server-consent.ts';
import { panelStyles } from './styles.ts';

interface ModelRow extends ModelChoice {
  /** What is stored of each candidate Lantern downloads, by `candidateKey` (none for the app's own files). */
  stored: Record<string, StoredModel>;
  /** Candidates with bytes stored that are not in this device's chain (it cannot run them, or they failed here). */
  storedElsewhere: StoredModel[];
}

/** A download started from this panel (`lantern.storage.prefetch`), with its progress. */
interface Download {
  controller: AbortController;
  loaded: number;
  total: number;
  /** The files arriving now, by name. */
  files: Map<string, { loaded: number; total: number }>;
}

const size = (bytes?: number) =>
  bytes === undefined
    ? ''
    : bytes >= 1e9
      ? `${(bytes / 1e9).toFixed(1)} GB`
      : bytes >= 1e6
        ? `${Math.round(bytes / 1e6)} MB`
        : `${Math.round(bytes / 1e3)} kB`;

/** A loaded candidate's tag: where its runtime found it runs (`loaded · wasm, 4 threads`), where its engine says. */
const loadedTag = (on: RunsOn | undefined) =>
  on === undefined
    ? 'loaded'
    : `loaded · ${on.device}${on.threads === undefined ? '' : `, ${on.threads} thread${on.threads === 1 ? '' : 's'}`}`;

const percent = (loaded: number, total: number) => (total > 0 ? Math.min(100, Math.round((100 * loaded) / total)) : 0);

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** A list of file names, cut short: a web-llm model has dozens of shards. */
const listed = (names: string[], shown = 3) =>
  names.length <= shown ? names.join(', ') : `${names.slice(0, shown).join(', ')} and ${names.length - shown} more`;

/** The key of a download: a candidate of a public ID. */
const slotOf = (id: string, key: string) => `${id}\n${key}`;

/**
 * Each public model ID: the fallback chain this device will try (local models and remote servers, in the policy's
 * order), which candidate answers it, what it loaded (engine, device, size), load progress, and what this device has
 * stored of each downloaded candidate (`lantern.storage`: complete, partial with what is missing, when last used),
 * with a download ahead of need (its progress, file by file, and a cancel) and a delete; the candidates passed over,
 * with why. At the top, the origin's storage: used of its quota, and whether the browser keeps it. A form adds an
 * OpenAI-compatible server to the chat models' chains (it reloads the page with `?remote=…`): the person typing it in
 * is their yes to sending chats there (server-consent.ts), so the form shows the origin they go to before they press
 * the button.
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
        margin: 0.4rem 0;
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
      .stored {
        font-weight: 400;
        color: var(--muted);
        font-size: 0.85rem;
        margin: 0.15rem 0 0;
      }
      .actions {
        display: flex;
        gap: 0.4rem;
        flex-wrap: wrap;
        margin-top: 0.3rem;
        font-weight: 400;
      }
      .actions button {
        padding: 0.15rem 0.6rem;
        font-size: 0.85rem;
      }
      .download {
        font-weight: 400;
        font-size: 0.85rem;
        margin-top: 0.3rem;
      }
      .download .file {
        display: grid;
        grid-template-columns: minmax(8rem, 16rem) 1fr auto;
        gap: 0.5rem;
        align-items: center;
      }
      .download .file code {
        overflow: hidden;
        text-overflow: ellipsis;
        white-space: nowrap;
      }
      dl.passed-over {
        margin: 0.5rem 0 0;
        font-size: 0.85rem;
      }
      dl.passed-over dt {
        font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
      }
      dl.passed-over dd {
        margin: 0 0 0.3rem 1rem;
        color: var(--muted);
      }
    `,
  ];
  static override properties = {
    lantern: { attribute: false },
    rows: { state: true },
    loaded: { state: true },
    progress: { state: true },
    message: { state: true },
    error: { state: true },
    readError: { state: true },
    report: { state: true },
    appModelsOnly: { state: true },
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
  /** What went wrong last (a download, a delete, reading the storage): shown, never thrown. */
  declare error: string;
  /** Why the models or the storage could not be read, on the last refresh. */
  declare readError: string;
  /** The origin's storage, as the browser reports it. */
  declare report: StorageReport | undefined;
  /** Whether every model of the profile is the app's own files (the bundled profile): nothing to download or delete. */
  declare appModelsOnly: boolean;
  /** What the server form's Base URL field holds, to show where chats would go. */
  declare serverInput: string;
  /** The servers remembered in this browser (used without asking). */
  declare remembered: string[];
  #listening = false;
  /** Downloads started here, by `slotOf(id, key)`: their progress changes too often to be reactive state. */
  readonly #downloads = new Map<string, Download>();
  /** Public IDs whose load reported a total (then per-file progress does not move the loading bar). */
  readonly #totals = new Set<string>();
  #frame = 0;
  /** Counts refreshes, so that a slow one does not overwrite a later one. */
  #turn = 0;

  constructor() {
    super();
    this.rows = [];
    this.loaded = {};
    this.progress = {};
    this.message = '';
    this.error = '';
    this.readError = '';
    this.report = undefined;
    this.appModelsOnly = false;
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

  override disconnectedCallback() {
    super.disconnectedCallback();
    cancelAnimationFrame(this.#frame);
    this.#frame = 0;
  }

  /**
   * Reads the chains with what is stored of each model, and the origin's storage, again. The two are read apart: the
   * storage's `persisted` may wait on the user (Firefox asks them), and the models must not.
   */
  async refresh() {
    const lantern = this.lantern;
    if (!lantern) return;
    const turn = ++this.#turn;
    void this.#readStorage(lantern, turn);
    const [models, entries] = await Promise.allSettled([lantern.models(), lantern.storage.list()]);
    if (turn !== this.#turn) return;
    const problems: string[] = [];
    let stored: StoredModelEntry[] = [];
    if (entries.status === 'fulfilled') stored = entries.value;
    else problems.push(`The stored models could not be read: ${messageOf(entries.reason)}`);
    if (models.status === 'fulfilled') {
      this.rows = models.value.map((model) => {
        const candidates = stored.find((entry) => entry.id === model.id)?.candidates ?? [];
        const inChain = new Set(model.candidates.map(candidateKey));
        return {
          ...model,
          stored: Object.fromEntries(candidates.map((c) => [c.candidate, c])),
          storedElsewhere: candidates.filter((c) => !inChain.has(c.candidate) && c.bytes > 0),
        };
      });
    } else problems.push(`The models could not be listed: ${messageOf(models.reason)}`);
    this.appModelsOnly = entries.status === 'fulfilled' && stored.every((entry) => entry.candidates.length === 0);
    this.readError = problems.join(' ');
  }

  async #readStorage(lantern: LocalAPI, turn: number) {
    try {
      const report = await lantern.storage.estimate();
      if (turn === this.#turn) this.report = report;
    } catch (error) {
      if (turn === this.#turn) this.readError = `The storage estimate could not be read: ${messageOf(error)}`;
    }
  }

  #onProgress(progress: LoadProgress) {
    const { model } = progress;
    if (progress.status === 'ready') {
      this.loaded = { ...this.loaded, [model]: progress.resolved };
      this.progress = { ...this.progress, [model]: 100 };
      this.#totals.delete(model);
      void this.refresh();
    } else if (progress.status === 'progress_total') {
      this.#totals.add(model);
      this.progress = { ...this.progress, [model]: Math.round(progress.progress) };
      // A download finished (here, in another tab, or in the engine worker): what is stored changed.
      if (progress.total > 0 && progress.loaded >= progress.total) void this.refresh();
    } else if (progress.status === 'progress' && !this.#totals.has(model)) {
      this.progress = { ...this.progress, [model]: Math.round(progress.progress) };
    } else if (progress.status === 'initiate' && this.progress[model] === undefined) {
      this.progress = { ...this.progress, [model]: 0 };
    } else if (progress.status === 'skipped' || progress.status === 'failed') {
      // The next candidate, if any, reports its own progress; the reason shows under the model.
      this.#clearProgress(model);
      void this.refresh();
    }
  }

  #clearProgress(model: string) {
    const { [model]: _, ...rest } = this.progress;
    this.progress = rest;
    this.#totals.delete(model);
  }

  override render() {
    const device = this.lantern?.device;
    return html`
      <h2>Models</h2>
      <p class="hint">
        Each ID runs the first candidate this device can run
        (${device ? html`<strong>${device.device}</strong>${device.shaderF16 ? ', shader-f16' : ', no shader-f16'}` : '…'}).
        Models load on first use; a downloaded model is stored in this browser and loads offline after that.
      </p>
      ${this.#storage()}
      <p role="status" aria-live="polite">${this.message}</p>
      ${this.error ? html`<p class="error" role="alert">${this.error}</p>` : nothing}
      ${this.readError ? html`<p class="error" role="alert">${this.readError}</p>` : nothing}
      <div class="models">${this.rows.map((row) => this.#row(row))}</div>
      <div class="row" style="margin-top:1rem">
        <button type="button" class="secondary" @click=${this.#unload}>Unload all models</button>
      </div>
      ${this.#serverForm()}
    `;
  }

  /** The origin's storage: what it uses of its quota, whether the browser keeps it, and a way to ask it to. */
  #storage() {
    const storage = this.lantern?.storage;
    const report = this.report;
    if (!storage) return nothing;
    return html`<section class="card" aria-label="Storage" style="margin-bottom:0.75rem">
      <p style="margin:0">
        ${
          !report
            ? "Reading this site's storage…"
            : report.quota > 0 && Number.isFinite(report.quota)
              ? html`This site stores <strong>${size(report.usage)}</strong> of the
                  <strong>${size(report.quota)}</strong> the browser allows it
                  (${percent(report.usage, report.quota)}%).`
              : 'The browser does not report how much this site may store.'
        }
        ${
          !report
            ? nothing
            : report.persisted
              ? 'Persisted: the browser keeps it until you clear it.'
              : 'Not persisted: the browser may clear it when space runs low (Safari after seven days without a visit).'
        }
      </p>
      ${
        report && !report.persisted
          ? html`<div class="actions">
              <button type="button" class="secondary" @click=${this.#persist}>Keep storage</button>
            </div>`
          : nothing
      }
      ${
        !storage.available
          ? html`<p class="hint" style="margin:0.5rem 0 0">
              This page cannot store downloads (no Cache API: not a secure context).
            </p>`
          : this.appModelsOnly
            ? html`<p class="hint" style="margin:0.5rem 0 0">
                These models ship with the app: they are stored with the app's own files (its service worker keeps them
                for offline use), so there is nothing to download or delete here.
              </p>`
            : nothing
      }
    </section>`;
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
    const downloading = [...this.#downloads.keys()].some((slot) => slot.startsWith(slotOf(row.id, '')));
    const inChain = new Set(row.candidates.map(candidateKey));
    const passedOver = [
      // In the chain: passed over on its last load (no room, no network), tried again next time; else never tried here.
      ...row.skipped.map((s) => ({
        ...s,
        why: inChain.has(s.candidate) ? 'passed over last time' : 'cannot run here',
      })),
      ...row.failed.map((f) => ({ ...f, why: 'failed to load here (skipped until the models are unloaded)' })),
    ];
    return html`<section class="card" aria-label=${row.id}>
      <h3><code>${row.id}</code> <span class="tag">${row.task}</span></h3>
      ${
        progress !== undefined && progress < 100 && !downloading
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
                if (isRemote(c)) return this.#remoteItem(c, serving);
                return html`<li class=${key === loaded ? 'loaded' : ''}>
                  ${candidateLabel(c)}
                  <code>${c.model}</code> ${size(c.downloadBytes)}
                  ${key === loaded ? html`<span class="tag">${loadedTag(row.runsOn[key])}</span>` : nothing} ${serving}
                  ${this.#storedItem(row, key, key === loaded)}
                </li>`;
              })}
            </ol>`
      }
      ${
        row.storedElsewhere.length > 0
          ? html`<p class="stored">Also stored, though this device does not run them now:</p>
              <ol>
                ${row.storedElsewhere.map(
                  (s) => html`<li><code>${s.candidate}</code> ${this.#storedItem(row, s.candidate, false, false)}</li>`,
                )}
              </ol>`
          : nothing
      }
      ${
        passedOver.length > 0
          ? html`<dl class="passed-over" aria-label=${`Candidates of ${row.id} not used`}>
              ${passedOver.map(
                (p) =>
                  html`<dt>${p.candidate} (${p.why})</dt>
                    <dd>${p.reason}</dd>`,
              )}
            </dl>`
          : nothing
      }
    </section>`;
  }

  /**
   * What is stored of a local candidate, and its buttons: Download (or resume) and Delete for a downloaded model, its
   * download's progress while it runs; a model of the app's own files says so.
   */
  #storedItem(row: ModelRow, key: string, loadedNow: boolean, canDownload = true) {
    const stored = row.stored[key];
    if (!stored) return html`<span class="tag">ships with the app</span>`;
    const download = this.#downloads.get(slotOf(row.id, key));
    const available = this.lantern?.storage.available ?? false;
    const tag = { complete: 'stored', partial: 'partly stored', none: 'not stored' }[stored.state];
    const of = stored.totalBytes ? ` of ${size(stored.totalBytes)}` : '';
    const detail =
      stored.state === 'complete'
        ? `${size(stored.bytes)}`
        : stored.state === 'partial'
          ? `${size(stored.bytes)}${of}; missing ${listed(stored.missing)}`
          : stored.totalBytes
            ? `${size(stored.totalBytes)} to download`
            : '';
    const verb = stored.state === 'partial' ? 'Resume download' : 'Download';
    const lastUsed = stored.lastUsed ? `last used ${new Date(stored.lastUsed).toLocaleString()}` : '';
    return html`<span class="tag">${tag}</span>
      ${detail || lastUsed ? html`<p class="stored">${[detail, lastUsed].filter(Boolean).join(' · ')}</p>` : nothing}
      ${download ? this.#downloadProgress(row.id, key, download) : nothing}
      <div class="actions">
        ${
          available && canDownload && !download && stored.state !== 'complete'
            ? html`<button type="button" aria-label=${`${verb} ${key}`} @click=${() => this.#download(row.id, key)}>
                ${verb}
              </button>`
            : nothing
        }
        ${
          download
            ? html`<button
                type="button"
                class="secondary"
                aria-label=${`Cancel the download of ${key}`}
                @click=${() => download.controller.abort()}
              >
                Cancel
              </button>`
            : nothing
        }
        ${
          stored.bytes > 0 && !download
            ? html`<button
                type="button"
                class="secondary"
                aria-label=${`Delete ${key}`}
                @click=${() => this.#remove(row.id, key, loadedNow)}
              >
                Delete
              </button>`
            : nothing
        }
      </div>`;
  }

  #downloadProgress(id: string, key: string, download: Download) {
    const total = percent(download.loaded, download.total);
    return html`<div class="download">
      <label for=${`download-${id}-${key}`}>
        Downloading: ${size(download.loaded)}${download.total ? ` of ${size(download.total)}` : ''}
      </label>
      <progress id=${`download-${id}-${key}`} max="100" .value=${total}>${total}%</progress>
      ${[...download.files].map(
        ([file, p]) =>
          html`<div class="file">
            <code title=${file}>${file}</code>
            <progress max="100" .value=${percent(p.loaded, p.total)} aria-label=${`${file} of ${key}`}></progress>
            <span>${size(p.loaded)}${p.total ? ` of ${size(p.total)}` : ''}</span>
          </div>`,
      )}
    </div>`;
  }

  #remoteItem(c: RemoteCandidate, serving: unknown) {
    return html`<li class=${serving === nothing ? '' : 'loaded'}>
      remote server <code>${c.model}</code> at <code>${candidateKey(c).replace(/^remote:[^@]*@/, '')}</code>
      ${serving}
    </li>`;
  }

  /** Downloads a candidate ahead of need (`lantern.storage.prefetch`), showing its progress; cancelled by its button. */
  async #download(id: string, key: string) {
    const lantern = this.lantern;
    const slot = slotOf(id, key);
    if (!lantern || this.#downloads.has(slot)) return;
    const download: Download = { controller: new AbortController(), loaded: 0, total: 0, files: new Map() };
    this.#downloads.set(slot, download);
    this.error = '';
    this.message = `Downloading ${key} for ${id}…`;
    this.requestUpdate();
    try {
      const stored = await lantern.storage.prefetch(id, {
        candidate: key,
        signal: download.controller.signal,
        onProgress: (progress) => this.#onDownloadProgress(download, progress),
      });
      this.message = `${key}: ${describeStored(stored)}.`;
    } catch (error) {
      if (download.controller.signal.aborted) {
        this.message = `The download of ${key} was cancelled: what arrived is kept, and the next download resumes from there.`;
      } else {
        this.message = '';
        this.error = `The download of ${key} failed: ${messageOf(error)}`;
      }
    } finally {
      this.#downloads.delete(slot);
      // Its progress events also went to the loading bar, which no load will finish.
      if (this.loaded[id] === undefined) this.#clearProgress(id);
      this.requestUpdate();
      await this.refresh();
    }
  }

  #onDownloadProgress(download: Download, progress: LoadProgress) {
    if (progress.status === 'progress') {
      download.files.set(progress.file, { loaded: progress.loaded, total: progress.total });
    } else if (progress.status === 'done') {
      download.files.delete(progress.file);
    } else if (progress.status === 'progress_total') {
      download.loaded = progress.loaded;
      download.total = progress.total;
    } else return;
    // Bytes arrive many times a frame: draw at most once a frame.
    this.#frame ||= requestAnimationFrame(() => {
      this.#frame = 0;
      this.requestUpdate();
    });
  }

  /** Deletes a candidate's stored files (`lantern.storage.remove`); it downloads again on its next use. */
  async #remove(id: string, key: string, loadedNow: boolean) {
    if (!this.lantern) return;
    this.error = '';
    try {
      const freed = await this.lantern.storage.remove(id, key);
      this.message =
        `Deleted ${key}: ${size(freed)} freed; it downloads again on its next use.` +
        (loadedNow ? ' It stays in memory until the models are unloaded.' : '');
    } catch (error) {
      this.message = '';
      this.error = `${key} could not be deleted: ${messageOf(error)}`;
    }
    await this.refresh();
  }

  /** Asks the browser to keep this origin's storage until the user clears it. */
  async #persist() {
    if (!this.lantern) return;
    this.error = '';
    try {
      const kept = await this.lantern.storage.persist();
      this.message = kept
        ? "The browser keeps this site's storage until you clear it."
        : "The browser did not agree to keep this site's storage (browsers grant it to sites you use often, bookmark or install).";
    } catch (error) {
      this.error = `Persistent storage could not be asked for: ${messageOf(error)}`;
    }
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
