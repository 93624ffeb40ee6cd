import { css, html, LitElement, nothing } from 'lit';
import type OpenAI from 'openai';
import { panelStyles } from './styles.ts';

type TranscriptFormat = 'json' | 'text' | 'srt' | 'vtt' | 'verbose_json';

/** What came back: text as it streams, or the whole body in the format asked for. */
type Result =
  | { kind: 'stream'; text: string; done: boolean }
  | { kind: 'text'; text: string; format: TranscriptFormat }
  | { kind: 'verbose'; body: OpenAI.Audio.TranscriptionVerbose };

/**
 * Recording containers in the order they are asked for: Chrome and Firefox record Opus in WebM or Ogg, Safari AAC in
 * MP4. The service worker side decodes whichever it gets, so the recording is sent as it is.
 */
const RECORDING_TYPES = ['audio/webm;codecs=opus', 'audio/webm', 'audio/ogg;codecs=opus', 'audio/mp4'];

/** How often the recording time is redrawn: often enough that the seconds tick evenly. */
const CLOCK_INTERVAL_MS = 250;

const extensionOf = (mimeType: string) =>
  mimeType.includes('mp4') ? 'm4a' : mimeType.includes('ogg') ? 'ogg' : 'webm';

const clock = (ms: number) => {
  const seconds = Math.floor(ms / 1000);
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`;
};

const kilobytes = (bytes: number) => `${(bytes / 1024).toFixed(1)} kB`;

/**
 * Speech to text through `/v1/audio/transcriptions` (or `/translations`, to English): audio recorded from the
 * microphone or a file chosen or dropped, sent as multipart form data with the model, language, prompt, response
 * format and timestamp granularities. No label here contains one of the chat panel's ("Temperature", "Response
 * format"): hidden tabs stay in the page, and Playwright's getByLabel, which matches hidden fields and substrings,
 * would find both.
 */
export class TranscriptionPanel extends LitElement {
  static override styles = [
    panelStyles,
    css`
      .source {
        display: grid;
        gap: 0.75rem;
        grid-template-columns: repeat(auto-fit, minmax(16rem, 1fr));
        margin-bottom: 1rem;
      }
      .drop {
        border: 2px dashed var(--border);
        border-radius: 8px;
        padding: 0.75rem;
      }
      .drop.over {
        border-color: var(--accent);
      }
      .clock {
        font-variant-numeric: tabular-nums;
        font-weight: 700;
      }
      audio {
        width: 100%;
        margin-top: 0.5rem;
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
      .transcript {
        white-space: pre-wrap;
        border: 1px solid var(--border);
        border-radius: 8px;
        padding: 0.6rem 0.8rem;
        background: var(--surface);
        min-height: 2.5rem;
      }
      .status {
        min-height: 1.2em;
        color: var(--muted);
        font-size: 0.85rem;
      }
      .scroll {
        overflow-x: auto;
        max-height: 24rem;
      }
      td.time {
        font-variant-numeric: tabular-nums;
        white-space: nowrap;
      }
    `,
  ];
  static override properties = {
    client: { attribute: false },
    models: { attribute: false },
    audio: { state: true },
    recording: { state: true },
    elapsedMs: { state: true },
    dragging: { state: true },
    translate: { state: true },
    format: { state: true },
    result: { state: true },
    error: { state: true },
    status: { state: true },
    busy: { state: true },
  };

  declare client: OpenAI | undefined;
  /** The transcription models the profile serves (`teal-finch-4`); `whisper-1`, its OpenAI name, is offered too. */
  declare models: string[];
  declare audio: File | undefined;
  declare recording: boolean;
  declare elapsedMs: number;
  declare dragging: boolean;
  declare translate: boolean;
  declare format: TranscriptFormat;
  declare result: Result | undefined;
  declare error: string;
  declare status: string;
  declare busy: boolean;
  #recorder: MediaRecorder | undefined;
  #clock: ReturnType<typeof setInterval> | undefined;
  #abort: AbortController | undefined;
  #audioURL: string | undefined;

  constructor() {
    super();
    this.models = [];
    this.recording = false;
    this.elapsedMs = 0;
    this.dragging = false;
    this.translate = false;
    this.format = 'json';
    this.error = '';
    this.status = '';
    this.busy = false;
  }

  override disconnectedCallback() {
    super.disconnectedCallback();
    this.#stopRecording();
    this.#abort?.abort();
  }

  override render() {
    const models = [...new Set([...this.models, 'whisper-1'])];
    return html`
      <h2>Speech to text</h2>
      <p class="hint">Record from the microphone or pick an audio file (wav, mp3, ogg, webm, m4a, flac).</p>
      <div class="source">
        <div class="card" role="group" aria-labelledby="microphone">
          <label id="microphone">Microphone</label>
          <div class="row">
            ${
              this.recording
                ? html`<button type="button" @click=${() => this.#stopRecording()}>Stop recording</button>
                    <span class="clock" role="timer" aria-label="Recording time">${clock(this.elapsedMs)}</span>`
                : html`<button type="button" ?disabled=${this.busy} @click=${this.#startRecording}>Record</button>`
            }
          </div>
        </div>
        <div
          class="drop ${this.dragging ? 'over' : ''}"
          @dragover=${(e: DragEvent) => (e.preventDefault(), (this.dragging = true))}
          @dragleave=${() => (this.dragging = false)}
          @drop=${this.#onDrop}
        >
          <label for="file">Audio file (or drop one here)</label>
          <input id="file" type="file" accept="audio/*,video/webm,video/mp4" @change=${this.#onChoose} />
        </div>
      </div>
      ${
        this.audio
          ? html`<p class="hint">
                Sending
                <strong>${this.audio.name}</strong>
                (${kilobytes(this.audio.size)}${this.audio.type ? `, ${this.audio.type}` : ''})
              </p>
              <audio controls src=${this.#audioURL!} aria-label="The audio to send"></audio>`
          : nothing
      }

      <form @submit=${this.#send}>
        <div class="grid" style="margin:0.75rem 0">
          <div>
            <label for="model">Model</label>
            <select id="model">
              ${models.map((m) => html`<option value=${m}>${m}</option>`)}
            </select>
          </div>
          <div>
            <label for="task">Task</label>
            <select
              id="task"
              @change=${(e: Event) => (this.translate = (e.target as HTMLSelectElement).value === 'translate')}
            >
              <option value="transcribe">Transcribe</option>
              <option value="translate">Translate to English</option>
            </select>
          </div>
          <div>
            <label for="language">Language</label>
            <input id="language" placeholder="auto (e.g. en, fr)" ?disabled=${this.translate} />
          </div>
          <div>
            <label for="format">Format</label>
            <select
              id="format"
              @change=${(e: Event) => (this.format = (e.target as HTMLSelectElement).value as TranscriptFormat)}
            >
              ${(['json', 'text', 'srt', 'vtt', 'verbose_json'] as const).map((f) => html`<option value=${f}>${f}</option>`)}
            </select>
          </div>
        </div>
        <label for="prompt">Prompt</label>
        <input id="prompt" placeholder="Spelling and context to follow, e.g. Lantern, WebGPU." />
        <div class="row" style="margin-top:0.5rem">
          <label class="check"><input id="stream" type="checkbox" ?disabled=${this.translate} /> Stream</label>
          ${
            this.format === 'verbose_json' && !this.translate
              ? html`<label class="check"><input id="segment" type="checkbox" checked /> Segment timestamps</label>
                  <label class="check"><input id="word" type="checkbox" /> Word timestamps</label>`
              : nothing
          }
        </div>
        <div class="row" style="margin-top:0.5rem">
          <button type="submit" ?disabled=${this.busy || this.recording || !this.audio || !this.client}>
            ${this.translate ? 'Translate' : 'Transcribe'}
          </button>
          <button type="button" class="secondary" ?disabled=${!this.busy} @click=${() => this.#abort?.abort()}>
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
    switch (result.kind) {
      case 'stream':
        return html`<h3>Transcript${result.done ? '' : ' (streaming)'}</h3>
          <p class="transcript" aria-busy=${!result.done}>${result.text}</p>`;
      case 'text':
        return result.format === 'srt' || result.format === 'vtt'
          ? html`<h3>${result.format === 'srt' ? 'SubRip (srt)' : 'WebVTT (vtt)'}</h3>
              <pre tabindex="0" aria-label="Subtitles"><code>${result.text}</code></pre>`
          : html`<h3>Transcript</h3>
              <p class="transcript">${result.text}</p>`;
      case 'verbose': {
        const { body } = result;
        return html`<h3>Transcript</h3>
          <p class="hint">Language: ${body.language} · ${body.duration.toFixed(2)} s</p>
          <p class="transcript">${body.text}</p>
          ${body.segments?.length ? this.#timeTable('Segments', body.segments) : nothing}
          ${
            body.words?.length
              ? this.#timeTable(
                  'Words',
                  body.words.map((w) => ({ ...w, text: w.word })),
                )
              : nothing
          }`;
      }
    }
  }

  #timeTable(caption: string, rows: { start: number; end: number; text: string }[]) {
    return html`<h3>${caption}</h3>
      <div class="scroll" tabindex="0" role="region" aria-label=${caption}>
        <table>
          <caption class="visually-hidden">
            ${caption}, with their start and end in seconds
          </caption>
          <thead>
            <tr>
              <th scope="col">Start</th>
              <th scope="col">End</th>
              <th scope="col">Text</th>
            </tr>
          </thead>
          <tbody>
            ${rows.map(
              (row) =>
                html`<tr>
                  <td class="time">${row.start.toFixed(2)}</td>
                  <td class="time">${row.end.toFixed(2)}</td>
                  <td>${row.text}</td>
                </tr>`,
            )}
          </tbody>
        </table>
      </div>`;
  }

  #useAudio(file: File) {
    if (this.#audioURL) URL.revokeObjectURL(this.#audioURL);
    this.#audioURL = URL.createObjectURL(file);
    this.audio = file;
    this.error = '';
  }

  #onChoose(event: Event) {
    const file = (event.target as HTMLInputElement).files?.[0];
    if (file) this.#useAudio(file);
  }

  #onDrop(event: DragEvent) {
    event.preventDefault();
    this.dragging = false;
    const file = event.dataTransfer?.files[0];
    if (file) this.#useAudio(file);
  }

  async #startRecording() {
    this.error = '';
    let stream: MediaStream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    } catch (error) {
      this.error = `The microphone could not be opened: ${(error as Error).message}. Pick an audio file instead.`;
      return;
    }
    const mimeType = RECORDING_TYPES.find((type) => MediaRecorder.isTypeSupported(type));
    const recorder = new MediaRecorder(stream, mimeType ? { mimeType } : undefined);
    const chunks: Blob[] = [];
    recorder.addEventListener('dataavailable', (e) => e.data.size && chunks.push(e.data));
    recorder.addEventListener('stop', () => {
      for (const track of stream.getTracks()) track.stop();
      const type = recorder.mimeType || mimeType || 'audio/webm';
      if (chunks.length) this.#useAudio(new File(chunks, `recording.${extensionOf(type)}`, { type }));
    });
    const started = performance.now();
    this.#clock = setInterval(() => (this.elapsedMs = performance.now() - started), CLOCK_INTERVAL_MS);
    this.elapsedMs = 0;
    this.#recorder = recorder;
    this.recording = true;
    recorder.start();
  }

  #stopRecording() {
    clearInterval(this.#clock);
    if (this.#recorder?.state === 'recording') this.#recorder.stop();
    this.#recorder = undefined;
    this.recording = false;
  }

  #value(id: string) {
    return (this.renderRoot.querySelector(`#${id}`) as HTMLInputElement | HTMLSelectElement | null)?.value.trim() ?? '';
  }

  #checked(id: string) {
    return (this.renderRoot.querySelector(`#${id}`) as HTMLInputElement | null)?.checked ?? false;
  }

  /** The form's fields, as the API names them: those left empty are not sent, so the server's defaults apply. */
  #parameters() {
    const granularities = (['segment', 'word'] as const).filter((g) => this.#checked(g));
    return {
      file: this.audio!,
      model: this.#value('model'),
      response_format: this.format,
      ...(this.#value('prompt') && { prompt: this.#value('prompt') }),
      ...(!this.translate && this.#value('language') && { language: this.#value('language') }),
      ...(!this.translate && granularities.length && { timestamp_granularities: granularities }),
    };
  }

  async #send(event: Event) {
    event.preventDefault();
    if (!this.client || !this.audio || this.busy) return;
    const parameters = this.#parameters();
    const stream = !this.translate && this.#checked('stream');
    this.busy = true;
    this.error = '';
    this.result = undefined;
    this.status = this.translate ? 'Translating…' : 'Transcribing…';
    this.#abort = new AbortController();
    const options = { signal: this.#abort.signal };
    const sent = performance.now();
    try {
      if (stream) {
        const result: Result = { kind: 'stream', text: '', done: false };
        this.result = result;
        // A stream is text events whatever the format picked: the API streams json or text only.
        const { timestamp_granularities: _, ...fields } = parameters;
        const events = await this.client.audio.transcriptions.create(
          { ...fields, response_format: 'json', stream: true },
          options,
        );
        for await (const e of events) {
          if (e.type === 'transcript.text.delta') result.text += e.delta;
          else if (e.type === 'transcript.text.done') result.text = e.text;
          this.result = { ...result };
        }
        if (this.#abort.signal.aborted) throw new Error('Stopped.');
        this.result = { ...result, done: true };
      } else {
        // The SDK's overloads tie the body's type to a literal response_format; this panel picks it at run time.
        const body: unknown = this.translate
          ? await this.client.audio.translations.create(
              parameters as OpenAI.Audio.TranslationCreateParams<'json'>,
              options,
            )
          : await this.client.audio.transcriptions.create(
              parameters as OpenAI.Audio.TranscriptionCreateParamsNonStreaming<'json'>,
              options,
            );
        this.result = this.#resultOf(body);
      }
      this.status = `Done in ${((performance.now() - sent) / 1000).toFixed(1)} s.`;
    } catch (error) {
      const aborted = this.#abort.signal.aborted;
      // The SDK's APIError carries the OpenAI error body's message.
      this.error = aborted ? 'Stopped.' : (error as Error).message;
      this.status = aborted ? 'Stopped.' : 'The request failed.';
      if (this.result?.kind === 'stream') this.result = { ...this.result, done: true };
    } finally {
      this.busy = false;
    }
  }

  #resultOf(body: unknown): Result {
    if (typeof body === 'string') return { kind: 'text', text: body, format: this.format };
    if (this.format === 'verbose_json') return { kind: 'verbose', body: body as OpenAI.Audio.TranscriptionVerbose };
    return { kind: 'text', text: (body as { text: string }).text, format: this.format };
  }
}

customElements.define('transcription-panel', TranscriptionPanel);
