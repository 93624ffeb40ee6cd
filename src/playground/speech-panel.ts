import { css, html, LitElement, nothing } from 'lit';
import type OpenAI from 'openai';
import {
  FORMAT_FILES,
  OPENAI_VOICES,
  PcmPlayer,
  progressiveFormat,
  requestSpeech,
  type SpeechFormat,
  type SpeechProgress,
  type SpokenAudio,
  type StreamFormat,
} from './speech-audio.ts';
import { panelStyles } from './styles.ts';

/** A text-to-speech model as `/v1/models` lists it: its ID and the voices `voice` may name. */
export interface SpeechModel {
  id: string;
  voices: string[];
}

/** OpenAI's names for its speech models, which Lantern answers as aliases of its own speech ID. */
const OPENAI_SPEECH_MODELS = ['tts-1', 'tts-1-hd', 'gpt-4o-mini-tts'];

/**
 * The formats in the order offered, each with what it is. wav first, and the default: it needs no optional encoder
 * (mp3 and aac may be refused in a browser without one), every browser plays it, and it plays as it arrives.
 */
const FORMATS: [SpeechFormat, string][] = [
  ['wav', 'wav'],
  ['opus', 'opus (Ogg)'],
  ['flac', 'flac'],
  ['pcm', 'pcm (raw 24 kHz 16-bit)'],
  ['mp3', 'mp3'],
  ['aac', 'aac'],
];

/** OpenAI's limit on `input`, which Lantern keeps. */
const MAX_INPUT = 4096;

const DEFAULT_TEXT = 'Hello. The small brown fox jumps, and the black cat sleeps on Sunday morning.';

const kilobytes = (bytes: number) => `${(bytes / 1024).toFixed(1)} kB`;

/** What the panel shows of the last request: its progress while it streams, then the audio. */
type Result =
  | { done: false; progress: SpeechProgress; progressive: boolean }
  | { done: true; audio: SpokenAudio; progressive: boolean; format: SpeechFormat; url: string; fileURL: string };

/**
 * Text to speech through `/v1/audio/speech`: the text, model, voice, speed, format, stream format and instructions as
 * the API names them. pcm and wav play through Web Audio as their bytes (or `speech.audio.delta` events) arrive; every
 * format ends in an `<audio>` player and a download of the file as sent. Time to first audio and the real-time factor
 * say how fast the model speaks here. No label here contains another panel's ("Message", "Name", "Texts"): hidden
 * tabs stay in the page, and Playwright's getByLabel matches hidden fields and substrings.
 */
export class SpeechPanel extends LitElement {
  static override styles = [
    panelStyles,
    css`
      .options {
        margin: 0.75rem 0;
      }
      .check {
        display: flex;
        gap: 0.4rem;
        align-items: center;
        font-weight: 400;
      }
      .check input {
        width: auto;
      }
      .note {
        color: var(--muted);
        font-size: 0.85rem;
      }
      .count {
        color: var(--muted);
        font-size: 0.8rem;
        margin: 0.2rem 0 0;
        text-align: right;
      }
      .status {
        min-height: 1.2em;
        color: var(--muted);
        font-size: 0.85rem;
      }
      .stats {
        display: flex;
        gap: 1rem;
        flex-wrap: wrap;
        font-size: 0.85rem;
        color: var(--muted);
        margin: 0.5rem 0;
      }
      audio {
        width: 100%;
      }
      a {
        color: var(--accent-text);
      }
    `,
  ];
  static override properties = {
    client: { attribute: false },
    models: { attribute: false },
    model: { state: true },
    format: { state: true },
    length: { state: true },
    result: { state: true },
    error: { state: true },
    status: { state: true },
    busy: { state: true },
    playing: { state: true },
  };

  declare client: OpenAI | undefined;
  /** The speech models the profile serves (`ochre-lark-4`) with their voices; OpenAI's model names are offered too. */
  declare models: SpeechModel[];
  /** The model picked (empty: the first). */
  declare model: string;
  declare format: SpeechFormat;
  /** Characters in the text box. */
  declare length: number;
  declare result: Result | undefined;
  declare error: string;
  declare status: string;
  declare busy: boolean;
  /** Whether audio is playing through Web Audio (the progressive path). */
  declare playing: boolean;
  #abort: AbortController | undefined;
  #player: PcmPlayer | undefined;

  constructor() {
    super();
    this.models = [];
    this.model = '';
    this.format = 'wav';
    this.length = DEFAULT_TEXT.length;
    this.error = '';
    this.status = '';
    this.busy = false;
    this.playing = false;
  }

  override disconnectedCallback() {
    super.disconnectedCallback();
    this.#stop();
    this.#forget();
  }

  /** The voices of the model picked: an OpenAI model name speaks in the first speech model's voices. */
  #voices(): string[] {
    const card = this.models.find((m) => m.id === this.model) ?? this.models[0];
    return card?.voices.length ? card.voices : [...OPENAI_VOICES];
  }

  override render() {
    const models = [...new Set([...this.models.map((m) => m.id), ...OPENAI_SPEECH_MODELS])];
    const progressive = progressiveFormat(this.format);
    return html`
      <h2>Text to speech</h2>
      <p class="hint">Type what to say: a model in this browser says it, sentence by sentence.</p>
      <form @submit=${this.#speak}>
        <label for="speech-text">Text to say</label>
        <textarea
          id="speech-text"
          rows="4"
          maxlength=${MAX_INPUT}
          aria-describedby="speech-count"
          .value=${DEFAULT_TEXT}
          @input=${(e: Event) => (this.length = (e.target as HTMLTextAreaElement).value.length)}
        ></textarea>
        <p class="count" id="speech-count">${this.length} of ${MAX_INPUT} characters</p>
        <div class="grid options">
          <div>
            <label for="speech-model">Model</label>
            <select id="speech-model" @change=${(e: Event) => (this.model = (e.target as HTMLSelectElement).value)}>
              ${models.map((m) => html`<option value=${m} ?selected=${m === this.model}>${m}</option>`)}
            </select>
          </div>
          <div>
            <label for="voice">Voice</label>
            <select id="voice">
              ${this.#voices().map((v) => html`<option value=${v}>${v}</option>`)}
            </select>
          </div>
          <div>
            <label for="speed">Speed</label>
            <input id="speed" type="number" min="0.25" max="4" step="0.25" value="1" />
          </div>
          <div>
            <label for="audio-format">Audio format</label>
            <select
              id="audio-format"
              @change=${(e: Event) => (this.format = (e.target as HTMLSelectElement).value as SpeechFormat)}
            >
              ${FORMATS.map(([f, label]) => html`<option value=${f} ?selected=${f === this.format}>${label}</option>`)}
            </select>
          </div>
          <div>
            <label for="stream-format">Stream format</label>
            <select id="stream-format">
              <option value="audio">audio (bytes)</option>
              <option value="sse">sse (events)</option>
            </select>
          </div>
        </div>
        <label for="instructions">Instructions</label>
        <input id="instructions" placeholder="How to say it, e.g. calmly (used by models that follow instructions)" />
        <div class="row" style="margin-top:0.5rem;align-items:center">
          <label class="check">
            <input id="play-streaming" type="checkbox" checked ?disabled=${!progressive} aria-describedby="play-hint" />
            Play as it arrives
          </label>
          <span class="note" id="play-hint">
            ${progressive ? 'through Web Audio, while the rest is made' : 'pcm and wav only: this format plays once complete'}
          </span>
        </div>
        <div class="row" style="margin-top:0.5rem">
          <button type="submit" ?disabled=${this.busy || !this.client}>Speak</button>
          <button type="button" class="secondary" ?disabled=${!this.busy && !this.playing} @click=${this.#stopPressed}>
            Stop
          </button>
        </div>
      </form>
      <p class="status" role="status" aria-live="polite">${this.status}</p>
      ${this.error ? html`<p class="error" role="alert">${this.error}</p>` : nothing}
      ${this.result ? this.#renderResult(this.result) : nothing}
    `;
  }

  #renderResult(result: Result) {
    if (!result.done) {
      const { progress } = result;
      return html`<h3>Speech (streaming)</h3>
        <p class="stats" aria-busy="true">
          <span>${kilobytes(progress.bytes)} received</span>
          ${progress.firstAudioMs === undefined ? nothing : html`<span>first audio ${progress.firstAudioMs} ms</span>`}
          ${result.progressive ? html`<span>${progress.streamedSeconds.toFixed(2)} s played as it arrived</span>` : nothing}
        </p>`;
    }
    const { audio, format } = result;
    const name = `speech.${FORMAT_FILES[format].extension}`;
    return html`<h3>Speech</h3>
      <p class="stats">
        <span>first audio ${audio.firstAudioMs ?? '–'} ms</span>
        ${
          audio.seconds === null
            ? html`<span>this browser cannot decode ${format}: download it instead</span>`
            : html`<span>${audio.seconds.toFixed(2)} s of audio</span>
                <span>made in ${(audio.totalMs / 1000).toFixed(2)} s</span>
                <span title="Time to make the audio divided by its length: below 1 is faster than real time">
                  real-time factor ${audio.seconds > 0 ? (audio.totalMs / 1000 / audio.seconds).toFixed(2) : '–'}
                </span>`
        }
        ${result.progressive ? html`<span>${audio.streamedSeconds.toFixed(2)} s played as it arrived</span>` : nothing}
      </p>
      <audio controls ?autoplay=${!result.progressive} src=${result.url} aria-label="Speech audio"></audio>
      <p>
        <a href=${result.fileURL} download=${name}>Download ${name}</a>
        (${kilobytes(audio.file.size)}${format === 'pcm' ? ', raw 24 kHz 16-bit little-endian mono' : ''})
      </p>`;
  }

  #value(id: string) {
    return (this.renderRoot.querySelector(`#${id}`) as HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement)
      .value;
  }

  /** The form's fields, as the API names them: instructions only when given, so the model's default applies. */
  #parameters(): OpenAI.Audio.SpeechCreateParams {
    const instructions = this.#value('instructions').trim();
    return {
      model: this.#value('speech-model'),
      input: this.#value('speech-text'),
      voice: this.#value('voice'),
      speed: Number(this.#value('speed')),
      response_format: this.format,
      stream_format: this.#value('stream-format') as StreamFormat,
      ...(instructions && { instructions }),
    };
  }

  async #speak(event: Event) {
    event.preventDefault();
    if (!this.client || this.busy) return;
    const params = this.#parameters();
    const progressive =
      progressiveFormat(this.format) && (this.renderRoot.querySelector('#play-streaming') as HTMLInputElement).checked;
    this.#stop();
    this.#forget();
    // Made here, in the click's task: an AudioContext started outside a user's gesture stays suspended.
    const player = progressive ? new PcmPlayer() : undefined;
    this.#player = player;
    this.busy = true;
    this.playing = progressive;
    this.error = '';
    this.status = 'Speaking…';
    this.result = { done: false, progressive, progress: { bytes: 0, streamedSeconds: 0, scheduledSamples: 0 } };
    this.#abort = new AbortController();
    try {
      const audio = await requestSpeech(this.client, params, {
        signal: this.#abort.signal,
        ...(player && { player }),
        onProgress: (progress) => (this.result = { done: false, progressive, progress }),
      });
      if (this.#abort.signal.aborted) throw new Error('Stopped.');
      const url = URL.createObjectURL(audio.playable);
      const fileURL = audio.playable === audio.file ? url : URL.createObjectURL(audio.file);
      this.result = { done: true, audio, progressive, format: params.response_format!, url, fileURL };
      this.status = `Done: ${audio.seconds === null ? kilobytes(audio.file.size) : `${audio.seconds.toFixed(2)} s of audio`}.`;
      if (player) void player.ended().then(() => player === this.#player && (this.playing = false));
    } catch (error) {
      const aborted = this.#abort.signal.aborted;
      // The SDK's APIError carries the OpenAI error body's message, naming the parameter (a format refused here, say).
      this.error = aborted ? 'Stopped.' : (error as Error).message;
      this.status = aborted ? 'Stopped.' : 'The request failed.';
      if (!this.result?.done) this.result = undefined;
      if (!aborted) this.#stop();
    } finally {
      this.busy = false;
    }
  }

  #stopPressed() {
    this.#abort?.abort();
    this.#stop();
  }

  /** Silences the Web Audio playback. */
  #stop() {
    this.#player?.stop();
    this.#player = undefined;
    this.playing = false;
  }

  /** Lets go of the last audio's object URLs. */
  #forget() {
    if (this.result?.done) {
      URL.revokeObjectURL(this.result.url);
      if (this.result.fileURL !== this.result.url) URL.revokeObjectURL(this.result.fileURL);
    }
    this.result = undefined;
  }
}

customElements.define('speech-panel', SpeechPanel);
