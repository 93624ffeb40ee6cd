import { css, html, LitElement, nothing } from 'lit';
import type OpenAI from 'openai';
import type { LocalAPI, OfflineStatus } from '../client/index.ts';
import './api-panel.ts';
import './capabilities-panel.ts';
import './chat-panel.ts';
import './documents-panel.ts';
import './embeddings-panel.ts';
import './keys-panel.ts';
import './models-panel.ts';
import type { Exchange } from './recording-fetch.ts';
import type { ServerChoice } from './server-consent.ts';
import './server-prompt.ts';
import { OPENAI_VOICES } from './speech-audio.ts';
import './speech-panel.ts';
import type { SpeechModel } from './speech-panel.ts';
import './transcription-panel.ts';
import './voice-panel.ts';

const TABS = [
  ['chat', 'Chat'],
  ['embeddings', 'Embeddings'],
  // Named for their tasks (and routes): transcription is speech to text, speech is text to speech.
  ['transcription', 'Speech to text'],
  ['speech', 'Text to speech'],
  // The Realtime API: both at once, in a call.
  ['voice', 'Voice'],
  ['documents', 'Documents'],
  ['models', 'Models'],
  ['keys', 'Keys'],
  ['api', 'API'],
  ['capabilities', 'Capabilities'],
] as const;

type Tab = (typeof TABS)[number][0];

/** The playground: one tab per part of Lantern, over one LocalAPI and one openai client. */
export class LanternPlayground extends LitElement {
  static override styles = css`
    :host {
      display: block;
      max-width: 68rem;
      margin: 0 auto;
      padding: 1rem;
      color: var(--text);
    }
    header {
      display: flex;
      flex-wrap: wrap;
      gap: 0.75rem 1.5rem;
      align-items: center;
      justify-content: space-between;
      margin-bottom: 1rem;
    }
    h1 {
      font-size: 1.4rem;
      margin: 0;
    }
    .controls {
      display: flex;
      gap: 0.75rem;
      align-items: center;
      flex-wrap: wrap;
    }
    select,
    button {
      font: inherit;
      color: inherit;
      background: var(--field);
      border: 1px solid var(--border);
      border-radius: 6px;
      padding: 0.3rem 0.6rem;
    }
    /* The tabs wrap onto a second line on a narrow screen: every one in sight, none behind a sideways scroll. */
    [role='tablist'] {
      display: flex;
      flex-wrap: wrap;
      gap: 0 0.25rem;
      border-bottom: 1px solid var(--border);
      margin-bottom: 1rem;
    }
    [role='tab'] {
      border: none;
      border-bottom: 3px solid transparent;
      border-radius: 0;
      background: transparent;
      padding: 0.5rem 0.8rem;
      cursor: pointer;
      white-space: nowrap;
    }
    /* A phone's first screen reaches the message box: the controls on one line, the tabs closer together (the tiny models' note is short for it). */
    @media (max-width: 40rem) {
      [role='tab'] {
        padding: 0.35rem 0.6rem;
      }
      .controls {
        gap: 0.5rem;
      }
      .controls select,
      .controls button {
        padding-inline: 0.35rem;
      }
    }
    [role='tab'][aria-selected='true'] {
      border-bottom-color: var(--accent);
      font-weight: 700;
    }
    :focus-visible {
      outline: 3px solid var(--focus);
      outline-offset: 2px;
    }
    .status {
      color: var(--muted);
      font-size: 0.85rem;
      margin: 0;
    }
    .tiny-models {
      border: 1px solid var(--border);
      border-left: 4px solid var(--accent);
      border-radius: 6px;
      background: var(--surface);
      padding: 0.4rem 0.75rem;
      margin-bottom: 0.5rem;
      font-size: 0.85rem;
    }
    .tiny-models p {
      margin: 0;
    }
    .tiny-models summary {
      cursor: pointer;
      color: var(--accent-text);
    }
    .tiny-models ul {
      margin: 0.25rem 0;
      padding-left: 1.25rem;
    }
  `;
  static override properties = {
    lantern: { attribute: false },
    client: { attribute: false },
    profile: { attribute: false },
    server: { attribute: false },
    pendingServer: { attribute: false },
    tab: { state: true },
    chatModels: { state: true },
    transcriptionModels: { state: true },
    speechModels: { state: true },
    exchange: { state: true },
    theme: { state: true },
    offline: { state: true },
  };

  declare lantern: LocalAPI | undefined;
  declare client: OpenAI | undefined;
  declare profile: 'bundled' | 'real';
  /** The server in the chat chains: one the person allowed. */
  declare server: ServerChoice | undefined;
  /** A server the page's URL names that the person has not allowed (yet): in no chain, and asked about. */
  declare pendingServer: ServerChoice | undefined;
  declare tab: Tab;
  declare chatModels: string[];
  declare transcriptionModels: string[];
  /** The text-to-speech models, with their voices: the speech tab's, and what the chat reads replies aloud with. */
  declare speechModels: SpeechModel[];
  declare exchange: Exchange | undefined;
  declare theme: 'light' | 'dark';
  /** Whether this device can work offline (`lantern.offlineReady`), once known. */
  declare offline: OfflineStatus | undefined;

  constructor() {
    super();
    this.profile = 'bundled';
    this.tab = 'chat';
    this.chatModels = [];
    this.transcriptionModels = [];
    this.speechModels = [];
    this.theme = matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
  }

  override updated(changed: Map<string, unknown>) {
    if (changed.has('lantern') && this.lantern) {
      void this.lantern.offlineReady.then((status) => (this.offline = status));
      void this.lantern.models().then((models) => {
        this.chatModels = models.filter((m) => m.task === 'chat' && m.candidates.length).map((m) => m.id);
        this.transcriptionModels = models
          .filter((m) => m.task === 'transcription' && m.candidates.length)
          .map((m) => m.id);
        // Asked once the engine's host is up (`models()` waits for its device): before, `/v1/models` has no engine.
        if (models.some((m) => m.task === 'speech' && m.candidates.length)) void this.#listSpeechModels();
      });
    }
    if (changed.has('theme')) document.documentElement.dataset.theme = this.theme;
  }

  override render() {
    return html`
      <header>
        <div>
          <h1>Lantern playground</h1>
          <p class="status">
            <code>${this.lantern?.baseURL ?? '/v1'}</code> answered by models in this browser
            ${this.lantern?.device ? html` · ${this.lantern.device.device}` : ''} ·
            <span role="status" title=${this.#offlineDetail()}>${this.#offlineSummary()}</span>
            ${this.server && this.server.policy !== 'local-only' ? html` · chats also go to <strong>${this.server.origin}</strong> (${this.server.policy})` : ''}
          </p>
        </div>
        <div class="controls">
          <label>
            Models
            <select @change=${this.#switchProfile} aria-label="Model profile">
              <option value="bundled" ?selected=${this.profile === 'bundled'}>Tiny test models</option>
              <option value="real" ?selected=${this.profile === 'real'} ?disabled=${!navigator.onLine}>
                Real models
              </option>
            </select>
          </label>
          <button
            type="button"
            aria-pressed=${this.theme === 'dark'}
            @click=${() => (this.theme = this.theme === 'dark' ? 'light' : 'dark')}
          >
            Dark theme
          </button>
        </div>
      </header>
      ${this.#tinyModels()}
      <server-prompt .server=${this.pendingServer}></server-prompt>
      <nav role="tablist" aria-label="Playground sections" @keydown=${this.#onTabKey}>
        ${TABS.map(
          ([id, label]) =>
            html`<button
              role="tab"
              id=${`tab-${id}`}
              aria-selected=${this.tab === id}
              aria-controls=${`panel-${id}`}
              tabindex=${this.tab === id ? 0 : -1}
              @click=${() => (this.tab = id)}
            >
              ${label}
            </button>`,
        )}
      </nav>
      ${TABS.map(
        ([id]) =>
          html`<section role="tabpanel" id=${`panel-${id}`} aria-labelledby=${`tab-${id}`} ?hidden=${this.tab !== id}>
            ${this.#panel(id)}
          </section>`,
      )}
    `;
  }

  #panel(tab: Tab) {
    switch (tab) {
      case 'chat':
        return html`<chat-panel
          .client=${this.client}
          .models=${this.chatModels}
          .speech=${this.speechModels[0]}
        ></chat-panel>`;
      case 'embeddings':
        return html`<embeddings-panel .client=${this.client}></embeddings-panel>`;
      case 'transcription':
        return html`<transcription-panel
          .client=${this.client}
          .models=${this.transcriptionModels}
        ></transcription-panel>`;
      case 'speech':
        return html`<speech-panel .client=${this.client} .models=${this.speechModels}></speech-panel>`;
      case 'voice':
        return html`<voice-panel .client=${this.client} .speech=${this.speechModels[0]}></voice-panel>`;
      case 'documents':
        return html`<documents-panel
          .client=${this.client}
          .lantern=${this.lantern}
          .models=${this.chatModels}
          .active=${this.tab === 'documents'}
        ></documents-panel>`;
      case 'models':
        return html`<models-panel .lantern=${this.lantern}></models-panel>`;
      case 'keys':
        return html`<keys-panel .keys=${this.lantern?.keys}></keys-panel>`;
      case 'api':
        return html`<api-panel .exchange=${this.exchange} .profile=${this.profile}></api-panel>`;
      case 'capabilities':
        return html`<capabilities-panel .lantern=${this.lantern}></capabilities-panel>`;
    }
  }

  /**
   * The speech models and their voices, from `/v1/models` (its `output_modalities` and `voices`): not through the
   * recording client, as this listing is the page's own, not a request the API tab should show.
   */
  async #listSpeechModels() {
    if (!this.client || !this.lantern) return;
    const quiet = this.client.withOptions({ fetch: this.lantern.fetch });
    try {
      const { data } = await quiet.models.list();
      // Lantern's own fields, which the SDK's Model type does not declare.
      const cards = data as (OpenAI.Model & { output_modalities?: string[]; voices?: string[] })[];
      this.speechModels = cards
        .filter((m) => m.output_modalities?.includes('audio'))
        .map((m) => ({ id: m.id, voices: m.voices?.length ? m.voices : [...OPENAI_VOICES] }));
    } catch (error) {
      // Without the list, the speech tab still offers OpenAI's model and voice names.
      console.warn('Could not list the speech models:', error);
    }
  }

  /**
   * What the bundled models are, said where a newcomer looks first, while they run (never over the real ones): tiny
   * test models that answer what they were taught, what that is, and how to run the real models instead.
   */
  #tinyModels() {
    if (this.profile !== 'bundled') return nothing;
    return html`<section class="tiny-models" aria-labelledby="tiny-models-title">
      <p>
        <strong id="tiny-models-title">Tiny test models</strong> run here: under 1M parameters, they answer only what
        they were taught. For real answers, choose <em>Real models</em> under Models (a download on first use).
      </p>
      <details>
        <summary>What they answer; real models in an app</summary>
        <p>Taught a few hundred phrasings of each of these, they answer:</p>
        <ul>
          <li>the suggested prompts, counting, sums, a short story, a poem, a few turns of small talk;</li>
          <li>tool calls for the weather and the time, and short JSON (structured output);</li>
          <li>now and then, a question about a short passage pasted with it, by copying the sentence that answers.</li>
        </ul>
        <p>
          They do not read your documents: in the Documents tab the search and its citations are real, but the tiny
          model's answer beside them is not taken from them. A real model answers from the passages found.
        </p>
        <p>
          In your own app, <code>startLocalAPI()</code> without <code>profile</code> runs the real models (a download on
          first use); <code>bundledProfile('/models')</code> runs these. The README's Models section and
          <code>docs/models.md</code> list them.
        </p>
      </details>
    </section>`;
  }

  /** One line on whether a reload works without the network. */
  #offlineSummary(): string {
    if (!this.offline) return 'getting ready to work offline…';
    if (!this.offline.ready) return `not available offline: ${this.offline.reason}`;
    const missing = this.offline.missing.length;
    return missing ? `ready to work offline (${missing} models download on first use)` : 'ready to work offline';
  }

  /** The models that answer offline, and what the others are missing. */
  #offlineDetail(): string {
    if (!this.offline) return '';
    const lines = [`Offline: ${this.offline.models.join(', ') || 'no model'}`];
    for (const { model, reason } of this.offline.missing) lines.push(`${model}: ${reason}`);
    return lines.join('\n');
  }

  /** Arrow keys, Home and End move between tabs, as the WAI-ARIA tabs pattern has it. */
  #onTabKey(event: KeyboardEvent) {
    const index = TABS.findIndex(([id]) => id === this.tab);
    const next = { ArrowRight: index + 1, ArrowLeft: index - 1, Home: 0, End: TABS.length - 1 }[event.key];
    if (next === undefined) return;
    event.preventDefault();
    this.tab = TABS[(next + TABS.length) % TABS.length]![0];
    void this.updateComplete.then(() => (this.renderRoot.querySelector(`#tab-${this.tab}`) as HTMLElement).focus());
  }

  #switchProfile(event: Event) {
    const value = (event.target as HTMLSelectElement).value;
    const url = new URL(location.href);
    if (value === 'real') url.searchParams.set('profile', 'real');
    else url.searchParams.delete('profile');
    location.assign(url);
  }
}

customElements.define('lantern-playground', LanternPlayground);
