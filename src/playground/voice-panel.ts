import { css, html, LitElement, nothing } from 'lit';
import type OpenAI from 'openai';
import type { RealtimeServerEvent } from 'openai/resources/realtime/realtime';
import {
  GET_TIME_TOOL,
  interruptEvents,
  RealtimeCall,
  runDemoTool,
  textMessageEvents,
  toolOutputEvents,
  voiceSession,
} from './realtime-call.ts';
import { OPENAI_VOICES } from './speech-audio.ts';
import type { SpeechModel } from './speech-panel.ts';
import { panelStyles } from './styles.ts';
import { VoiceLog, type VoiceEntry } from './voice-log.ts';

type CallState = 'idle' | 'connecting' | 'live';

const DEFAULT_INSTRUCTIONS = 'You are a helpful voice assistant. Answer in one or two short sentences.';

/**
 * The Realtime API in the page: a WebRTC call (realtime-call.ts) to Lantern's `/v1/realtime/calls`, made as any app
 * makes one (a client secret minted with the playground's key first). The log shows what the user said and what the
 * assistant says as it streams, the demo tool's calls and what the page answered, errors as the server sent them, and
 * each spoken turn's latency. No label here contains another panel's ("Voice", "Message", "Model", "Speed"): hidden
 * tabs stay in the page, and Playwright's getByLabel matches hidden fields and substrings.
 */
export class VoicePanel extends LitElement {
  static override styles = [
    panelStyles,
    css`
      .options {
        margin-bottom: 0.75rem;
      }
      .check {
        display: flex;
        gap: 0.4rem;
        align-items: center;
        font-weight: 400;
        margin-top: 0.5rem;
      }
      .check input {
        width: auto;
      }
      .status {
        color: var(--muted);
        font-size: 0.85rem;
        margin: 0;
      }
      audio {
        width: 100%;
        margin: 0.75rem 0 0;
      }
      div.log {
        padding: 0.5rem;
        border: 1px solid var(--border);
        border-radius: 8px;
        background: var(--surface);
        min-height: 6rem;
        max-height: 26rem;
        overflow-y: auto;
      }
      div.log ol {
        list-style: none;
        margin: 0;
        padding: 0;
      }
      div.log li {
        margin: 0.3rem 0;
        overflow-wrap: anywhere;
      }
      .who {
        font-weight: 700;
        margin-right: 0.3rem;
      }
      .pending {
        color: var(--muted);
        font-style: italic;
      }
      li.latency,
      li.note {
        color: var(--muted);
        font-size: 0.85rem;
      }
      .ms {
        font-variant-numeric: tabular-nums;
        font-weight: 700;
        color: var(--text);
      }
      li.tool code {
        word-break: break-word;
      }
      form {
        margin-top: 0.75rem;
      }
      form .row input {
        flex: 1 1 12rem;
        width: auto;
      }
    `,
  ];
  static override properties = {
    client: { attribute: false },
    speech: { attribute: false },
    state: { state: true },
    entries: { state: true },
  };

  declare client: OpenAI | undefined;
  /** The speech model the profile serves, for its voices. */
  declare speech: SpeechModel | undefined;
  declare state: CallState;
  declare entries: VoiceEntry[];
  #call: RealtimeCall | undefined;
  #log = new VoiceLog();
  /** The response in progress, from its `response.created` to its `response.done`. */
  #responding: string | undefined;

  constructor() {
    super();
    this.state = 'idle';
    this.entries = [];
  }

  override disconnectedCallback() {
    super.disconnectedCallback();
    void this.#call?.hangUp();
  }

  override updated(changed: Map<string, unknown>) {
    if (changed.has('entries')) {
      const log = this.renderRoot.querySelector('div.log');
      if (log) log.scrollTop = log.scrollHeight;
    }
  }

  override render() {
    const voices = this.speech?.voices.length ? this.speech.voices : [...OPENAI_VOICES];
    const live = this.state === 'live';
    return html`
      <h2>Voice</h2>
      <p class="hint">
        Talk with a model in this browser through the Realtime API over WebRTC: your speech is transcribed, answered and
        spoken back. Pause to end your turn. The page answers the <code>get_time</code> tool when the model calls it.
      </p>
      <div class="grid options">
        <div>
          <label for="instructions">Assistant instructions</label>
          <textarea id="instructions" rows="3" ?disabled=${this.state !== 'idle'}>${DEFAULT_INSTRUCTIONS}</textarea>
        </div>
        <div>
          <label for="speaker">Speaker</label>
          <select id="speaker" ?disabled=${this.state !== 'idle'}>
            ${voices.map((v) => html`<option value=${v}>${v}</option>`)}
          </select>
          <label class="check"
            ><input id="offer-tool" type="checkbox" checked ?disabled=${this.state !== 'idle'} /> Offer
            <code>get_time</code></label
          >
        </div>
      </div>
      <div class="row">
        ${
          this.state === 'idle'
            ? html`<button type="button" ?disabled=${!this.client} @click=${this.#talk}>Talk</button>`
            : html`<button type="button" ?disabled=${!live} @click=${this.#hangUp}>Hang up</button>`
        }
        <button type="button" class="secondary" ?disabled=${!live} @click=${this.#interrupt}>Interrupt</button>
        <p class="status" role="status">${this.#status()}</p>
      </div>
      <audio autoplay controls aria-label="The assistant's speech"></audio>
      <h3 id="call-log">Call transcript</h3>
      <div class="log" role="log" aria-live="polite" aria-labelledby="call-log" tabindex="0">
        <ol>
          ${this.entries.map((entry) => this.#entry(entry))}
        </ol>
      </div>
      <form @submit=${this.#sendText}>
        <label for="typed">Type to the assistant</label>
        <div class="row">
          <input id="typed" autocomplete="off" ?disabled=${!live} placeholder="Or type instead of speaking" />
          <button type="submit" ?disabled=${!live}>Send text</button>
        </div>
      </form>
    `;
  }

  #status(): string {
    if (this.state === 'connecting') return 'Connecting…';
    if (this.state === 'idle') return 'Not in a call.';
    const latencies = this.#log.latencies;
    if (!latencies.length) return 'In a call: speak, then pause.';
    const average = Math.round(latencies.reduce((a, b) => a + b, 0) / latencies.length);
    return `In a call · ${latencies.length} spoken turns, ${average} ms on average to first audio.`;
  }

  #entry(entry: VoiceEntry) {
    switch (entry.kind) {
      case 'user':
        return html`<li class="user">
          <span class="who">You${entry.typed ? ' (typed)' : ''}:</span>
          ${entry.text ? entry.text : html`<span class="pending">${entry.done ? '(nothing heard)' : 'listening…'}</span>`}
        </li>`;
      case 'assistant':
        return html`<li class="assistant" aria-busy=${!entry.done}>
          <span class="who">Assistant:</span>
          ${entry.text}${entry.interrupted ? html` <span class="pending">(interrupted)</span>` : nothing}
        </li>`;
      case 'tool':
        return html`<li class="tool">
          <span class="who">Tool call:</span> <code>${entry.name}(${entry.arguments || ''})</code>
          →
          ${entry.result === undefined ? html`<span class="pending">running…</span>` : html`<code>${entry.result}</code>`}
        </li>`;
      case 'latency':
        return html`<li class="latency">
          Turn ${entry.turn}: <span class="ms">${entry.ms} ms</span> from the end of your speech to the first audio
        </li>`;
      case 'error':
        // The alert is inside the item: a `role` on the `<li>` itself would take it out of the list.
        return html`<li class="error">
          <span role="alert"><span class="who">Error:</span> ${entry.message}</span>
        </li>`;
      case 'note':
        return html`<li class="note">${entry.text}</li>`;
    }
  }

  #value(id: string) {
    return (this.renderRoot.querySelector(`#${id}`) as HTMLInputElement | HTMLSelectElement | null)?.value.trim() ?? '';
  }

  #refresh() {
    this.entries = this.#log.entries;
  }

  async #talk() {
    if (!this.client || this.state !== 'idle') return;
    this.#log = new VoiceLog();
    this.#responding = undefined;
    this.#refresh();
    this.state = 'connecting';
    const offerTool = (this.renderRoot.querySelector('#offer-tool') as HTMLInputElement | null)?.checked ?? false;
    const session = voiceSession({
      instructions: this.#value('instructions'),
      voice: this.#value('speaker'),
      tools: offerTool ? [GET_TIME_TOOL] : [],
    });
    try {
      const call = await RealtimeCall.start({
        client: this.client,
        session,
        onEvent: (event) => this.#onEvent(event),
        onAudio: (stream) => {
          const audio = this.renderRoot.querySelector('audio');
          if (audio) audio.srcObject = stream;
        },
        onEnd: (reason) => {
          this.#call = undefined;
          this.state = 'idle';
          this.#log.note(reason);
          this.#refresh();
        },
      });
      this.#call = call;
      this.state = 'live';
      this.#log.note(`Connected: call ${call.id ?? '(no ID)'}, model ${call.model}.`);
    } catch (error) {
      this.state = 'idle';
      const { name, message } = error as Error;
      this.#log.error(
        name === 'NotAllowedError' || name === 'NotFoundError'
          ? `The microphone could not be opened: ${message}`
          : message,
      );
    }
    this.#refresh();
  }

  async #hangUp() {
    const call = this.#call;
    this.#call = undefined;
    this.state = 'idle';
    const audio = this.renderRoot.querySelector('audio');
    if (audio) audio.srcObject = null;
    await call?.hangUp();
    this.#log.note('You hung up.');
    this.#refresh();
  }

  #interrupt() {
    this.#send(...interruptEvents(this.#responding !== undefined));
  }

  #sendText(event: Event) {
    event.preventDefault();
    const input = this.renderRoot.querySelector('#typed') as HTMLInputElement;
    const text = input.value.trim();
    if (!text || !this.#call) return;
    if (this.#send(...textMessageEvents(text))) {
      this.#log.noteTyped(text);
      input.value = '';
      this.#refresh();
    }
  }

  #send(...events: Parameters<RealtimeCall['send']>): boolean {
    try {
      this.#call?.send(...events);
      return true;
    } catch (error) {
      this.#log.error((error as Error).message);
      this.#refresh();
      return false;
    }
  }

  #onEvent(event: RealtimeServerEvent) {
    const changed = this.#log.apply(event, performance.now());
    if (event.type === 'response.created') this.#responding = event.response.id;
    if (event.type === 'response.done' && event.response.id === this.#responding) this.#responding = undefined;
    if (event.type === 'response.done' && event.response.status === 'completed') this.#answerTools(event.response);
    if (changed) this.#refresh();
    // The status line's average changes with each turn's latency.
    if (event.type === 'output_audio_buffer.started') this.requestUpdate();
  }

  /** Runs the function calls a finished response made, and asks for the reply that reads their results. */
  #answerTools(response: Extract<RealtimeServerEvent, { type: 'response.done' }>['response']) {
    const calls = (response.output ?? []).flatMap((item) =>
      item.type === 'function_call' && item.call_id
        ? [{ callId: item.call_id, name: item.name ?? '', args: item.arguments ?? '' }]
        : [],
    );
    if (!calls.length) return;
    const outputs = calls.map(({ callId, name, args }) => ({ callId, output: runDemoTool(name, args) }));
    for (const { callId, output } of outputs) this.#log.noteToolResult(callId, output);
    this.#send(...toolOutputEvents(outputs));
  }
}

customElements.define('voice-panel', VoicePanel);
