import { css, html, LitElement, nothing } from 'lit';
import type OpenAI from 'openai';
import { PcmPlayer, requestSpeech } from './speech-audio.ts';
import type { SpeechModel } from './speech-panel.ts';
import { panelStyles } from './styles.ts';
import { checkReply, responseFormat, SCHEMA_EXAMPLES, type OutputMode } from './structured-output.ts';
import { SUGGESTED_PROMPTS } from './suggested-prompts.ts';
import { addToolCallDelta, parseTools, TOOL_EXAMPLE, toolChoice, type ToolCallView } from './tool-calling.ts';

interface Reply {
  choices: string[];
  finishReasons: (string | null)[];
  /** Milliseconds from sending to the first token. */
  firstTokenMs?: number;
  tokensPerSecond?: number;
  completionTokens?: number;
  error?: string;
  done: boolean;
  /** In a JSON mode: what the page's validator says of each finished choice. */
  checks?: ({ valid: boolean; message: string } | undefined)[];
  /** The tool calls of each choice. */
  toolCalls: ToolCallView[][];
  /** A reasoning model's thought before each choice's answer (`reasoning_content`). */
  thoughts: string[];
  /** How reading it aloud went, for its stats (set once it was read aloud). */
  readAloud?: string;
  /** Why reading it aloud failed. */
  readError?: string;
}

type Turn =
  /** `images`: data URLs of the images attached to the message, sent after its text as `image_url` parts. */
  | { role: 'user'; content: string; images: string[] }
  | { role: 'assistant'; reply: Reply }
  | { role: 'tool'; call: ToolCallView; content: string };

/** The reply being read aloud: which choice of which reply. */
interface Reading {
  reply: Reply;
  choice: number;
  /** Until the last audio arrives. */
  loading: boolean;
}

/** OpenAI's limit on a speech request's `input`: a longer reply is read up to it. */
const MAX_SPEECH_INPUT = 4096;

/** How the folded structured-output editor names each mode in its summary. */
const MODE_NAMES: Record<OutputMode, string> = { text: 'text', json_object: 'JSON object', json_schema: 'JSON schema' };

/**
 * A conversation through `/v1/chat/completions`, streamed: system prompt, model, every sampling parameter of the API,
 * stop and regenerate, and for each reply its time to first token and tokens per second. A structured-output mode
 * asks for JSON (any object, or valid against a schema picked or pasted), shows it as it streams, and validates it.
 * Tools can be declared: each call the assistant makes is shown with its arguments and answered here, and the
 * conversation goes on from its results. The parameters and both editors are folded at first, so that the
 * conversation and the message box are what the tab opens on. Images can be attached to a message (picked, or pasted
 * into the message box) and go with its text as `image_url` parts. Where a speech model is listed, each finished reply
 * can be read aloud through `/v1/audio/speech`: raw pcm, played through Web Audio as it arrives.
 */
export class ChatPanel extends LitElement {
  static override styles = [
    panelStyles,
    css`
      .options {
        display: grid;
        gap: 0.5rem;
        margin-bottom: 1rem;
      }
      summary {
        cursor: pointer;
        font-weight: 600;
      }
      img.thumb {
        max-height: 6rem;
        max-width: 10rem;
        border-radius: 4px;
        margin: 0.25rem 0.25rem 0 0;
      }
      ul.attached {
        display: flex;
        gap: 0.5rem;
        list-style: none;
        padding: 0;
        margin: 0.5rem 0 0;
      }
      ul.attached li {
        display: flex;
        align-items: start;
      }
      label.button {
        cursor: pointer;
        padding: 0.4rem 0.8rem;
        border: 1px solid var(--border, #ccc);
        border-radius: 4px;
      }
      details.thought {
        color: var(--muted);
        margin: 0.25rem 0;
      }
      details.thought summary {
        font-weight: 400;
      }
      summary .state {
        font-weight: 400;
        color: var(--muted);
      }
      .params {
        display: grid;
        gap: 0.75rem;
        margin-top: 0.75rem;
      }
      .params .model {
        grid-column: span 2;
      }
      .conversation {
        list-style: none;
        padding: 0;
        margin: 0;
        display: grid;
        gap: 0.75rem;
      }
      .conversation li {
        border: 1px solid var(--border);
        border-radius: 8px;
        padding: 0.6rem 0.8rem;
        background: var(--surface);
      }
      .conversation li.empty {
        border: none;
        background: none;
        padding: 0;
        color: var(--muted);
      }
      .suggestions {
        display: inline-flex;
        flex-wrap: wrap;
        gap: 0.4rem;
        margin-left: 0.3rem;
      }
      /* Small enough that a phone's first screen still reaches the message box below them. */
      .suggestions button {
        padding: 0.2rem 0.6rem;
        font-size: 0.9rem;
      }
      .conversation li.user {
        background: var(--user-bubble);
      }
      .who {
        font-size: 0.8rem;
        font-weight: 700;
        color: var(--muted);
      }
      .conversation p {
        margin: 0.25rem 0 0;
        white-space: pre-wrap;
      }
      .choices {
        display: grid;
        gap: 0.5rem;
        grid-template-columns: repeat(auto-fit, minmax(14rem, 1fr));
      }
      .choice h3 {
        margin: 0.25rem 0 0;
        font-size: 0.85rem;
      }
      .stats {
        display: flex;
        gap: 1rem;
        flex-wrap: wrap;
        font-size: 0.8rem;
        color: var(--muted);
      }
      .status {
        min-height: 1.2em;
        color: var(--muted);
        font-size: 0.85rem;
      }
      .actions {
        margin-top: 0.5rem;
      }
      .json {
        font-family: ui-monospace, monospace;
      }
      .check.valid {
        color: var(--ok, inherit);
      }
      .read-aloud {
        padding: 0.1rem 0.6rem;
        font-size: 0.8rem;
      }
    `,
  ];
  static override properties = {
    client: { attribute: false },
    models: { attribute: false },
    turns: { state: true },
    busy: { state: true },
    status: { state: true },
    mode: { state: true },
    useTools: { state: true },
    attached: { state: true },
    speech: { attribute: false },
    reading: { state: true },
  };

  declare client: OpenAI | undefined;
  declare models: string[];
  declare turns: Turn[];
  declare busy: boolean;
  declare status: string;
  declare mode: OutputMode;
  declare useTools: boolean;
  /** Images attached to the next message (picked or pasted), as data URLs. */
  declare attached: string[];
  /** The speech model replies are read aloud with (its first voice); none listed, no "Read aloud". */
  declare speech: SpeechModel | undefined;
  declare reading: Reading | undefined;
  #abort: AbortController | undefined;
  #readAbort: AbortController | undefined;
  #player: PcmPlayer | undefined;

  constructor() {
    super();
    this.models = [];
    this.turns = [];
    this.busy = false;
    this.status = '';
    this.mode = 'text';
    this.useTools = false;
    this.attached = [];
  }

  override disconnectedCallback() {
    super.disconnectedCallback();
    this.#stopReading();
  }

  override render() {
    return html`
      <h2>Chat</h2>
      <div class="options">${this.#renderParameters()} ${this.#renderOutputMode()} ${this.#renderTools()}</div>

      <ol class="conversation" aria-label="Conversation">
        ${
          this.turns.length
            ? this.turns.map((turn) => this.#renderTurn(turn))
            : html`<li class="empty">
                No messages yet: write one below, or try
                <span class="suggestions" role="group" aria-label="Suggested prompts">
                  ${SUGGESTED_PROMPTS.map(
                    (prompt) =>
                      html`<button
                        type="button"
                        class="secondary"
                        ?disabled=${!this.#canSend()}
                        @click=${() => this.#sendText(prompt)}
                      >
                        ${prompt}
                      </button>`,
                  )}
                </span>
              </li>`
        }
      </ol>
      <p class="status" role="status" aria-live="polite">${this.status}</p>

      <form @submit=${this.#send}>
        <label for="message">Message</label>
        <textarea
          id="message"
          rows="3"
          placeholder="Count to 10."
          @keydown=${(e: KeyboardEvent) => e.key === 'Enter' && !e.shiftKey && (e.preventDefault(), this.#send(e))}
          @paste=${this.#paste}
        ></textarea>
        ${this.#renderAttached()}
        <div class="row actions">
          <label class="button secondary" for="attach">Attach image</label>
          <input id="attach" type="file" accept="image/*" multiple hidden @change=${this.#pick} />
          <button type="submit" ?disabled=${!this.#canSend() || this.#waitingForResults()}>Send</button>
          <button type="button" class="secondary" ?disabled=${!this.busy} @click=${() => this.#abort?.abort()}>
            Stop
          </button>
          <button
            type="button"
            class="secondary"
            ?disabled=${this.busy || !this.#canRegenerate()}
            @click=${this.#regenerate}
          >
            Regenerate
          </button>
          <button type="button" class="secondary" ?disabled=${this.busy || !this.turns.length} @click=${this.#clear}>
            Clear
          </button>
        </div>
      </form>
    `;
  }

  /** The system prompt, the model and the sampling parameters, folded. */
  #renderParameters() {
    return html`<details>
      <summary>System prompt and parameters</summary>
      <div class="params">
        <div class="wide">
          <label for="system">System prompt</label>
          <textarea id="system" rows="2" placeholder="You are a helpful assistant."></textarea>
        </div>
        <div class="grid">
          <div class="model">
            <label for="model">Model</label>
            <select id="model">
              ${this.models.map((m) => html`<option value=${m}>${m}</option>`)}
            </select>
          </div>
          ${this.#number('temperature', 'Temperature', 0, 2, 0.1, '1')}
          ${this.#number('top_p', 'top_p', 0, 1, 0.05, '1')} ${this.#number('max_tokens', 'max_tokens', 1, 4096, 1, '')}
          ${this.#number('n', 'n (choices)', 1, 8, 1, '1')} ${this.#number('seed', 'Seed', -1e9, 1e9, 1, '')}
          <div>
            <label for="stop">Stop sequences</label>
            <input id="stop" placeholder="comma, separated" />
          </div>
          <div>
            <label for="reasoning-effort">Reasoning</label>
            <select id="reasoning-effort">
              <option value="">model's default</option>
              <option value="none">off (none)</option>
              <option value="low">low</option>
              <option value="medium">medium</option>
              <option value="high">high</option>
            </select>
          </div>
        </div>
      </div>
    </details>`;
  }

  #number(id: string, label: string, min: number, max: number, step: number, value: string) {
    return html`<div>
      <label for=${id}>${label}</label>
      <input id=${id} type="number" min=${min} max=${max} step=${step} .value=${value} />
    </div>`;
  }

  #renderTurn(turn: Turn) {
    if (turn.role === 'tool') {
      return html`<li class="tool">
        <span class="who">Result of ${turn.call.name}</span>
        <p class="json">${turn.content}</p>
      </li>`;
    }
    if (turn.role === 'user') {
      return html`<li class="user">
        <span class="who">You</span>
        <p>${turn.content}</p>
        ${turn.images.map((url, i) => html`<img class="thumb" src=${url} alt=${`Image ${i + 1} you sent`} />`)}
      </li>`;
    }
    const { reply } = turn;
    return html`<li class="assistant" aria-busy=${!reply.done}>
      <span class="who">Assistant</span>
      ${
        reply.choices.length > 1
          ? html`<div class="choices">
              ${reply.choices.map(
                (text, i) =>
                  html`<section class="choice" aria-label=${`Choice ${i + 1}`}>
                    <h3>Choice ${i + 1}</h3>
                    ${this.#renderThought(reply.thoughts[i])}
                    <p class="reply ${reply.checks ? 'json' : ''}">${text}</p>
                    ${this.#renderCheck(reply.checks?.[i])}
                    ${this.#renderReadAloud(reply, i, `Read choice ${i + 1} aloud`)}
                  </section>`,
              )}
            </div>`
          : html`${this.#renderThought(reply.thoughts[0])}
              <p class="reply ${reply.checks ? 'json' : ''}">${reply.choices[0] ?? ''}</p>
              ${this.#renderCheck(reply.checks?.[0])} ${this.#renderReadAloud(reply, 0, 'Read aloud')}`
      }
      ${
        reply.toolCalls[0]?.length
          ? html`<tool-calls-view
              .calls=${reply.toolCalls[0]}
              ?answering=${reply.done && turn === this.turns.at(-1) && !this.busy}
              @answer=${(e: CustomEvent<string[]>) => this.#answer(reply.toolCalls[0]!, e.detail)}
            ></tool-calls-view>`
          : nothing
      }
      ${reply.error ? html`<p class="error" role="alert">${reply.error}</p>` : nothing}
      <p class="stats">
        ${reply.firstTokenMs === undefined ? nothing : html`<span>first token ${reply.firstTokenMs} ms</span>`}
        ${reply.tokensPerSecond === undefined ? nothing : html`<span>${reply.tokensPerSecond} tokens/s</span>`}
        ${reply.completionTokens === undefined ? nothing : html`<span>${reply.completionTokens} tokens</span>`}
        ${reply.done && reply.finishReasons[0] ? html`<span>finish: ${reply.finishReasons.join(', ')}</span>` : nothing}
        ${reply.readAloud ? html`<span>${reply.readAloud}</span>` : nothing}
      </p>
      ${reply.readError ? html`<p class="error" role="alert">${reply.readError}</p>` : nothing}
    </li>`;
  }

  /**
   * A toggle that reads a finished choice aloud, and stops it when pressed again: only where a speech model is listed
   * and the choice has text.
   */
  #renderReadAloud(reply: Reply, choice: number, label: string) {
    if (!this.speech || !reply.done || !reply.choices[choice]?.trim()) return nothing;
    const pressed = this.reading?.reply === reply && this.reading.choice === choice;
    return html`<div class="actions">
      <button
        type="button"
        class="secondary read-aloud"
        aria-pressed=${pressed}
        @click=${() => (pressed ? this.#stopReading() : void this.#readAloud(reply, choice))}
      >
        ${label}
      </button>
    </div>`;
  }

  /**
   * Says a choice through `/v1/audio/speech` in the speech model's first voice, as raw pcm that plays through Web Audio
   * while the rest is made; the reply's stats say how long it took to start and how much was said.
   */
  async #readAloud(reply: Reply, choice: number) {
    if (!this.client || !this.speech) return;
    this.#stopReading();
    // Made here, in the click's task: an AudioContext started outside a user's gesture stays suspended.
    const player = new PcmPlayer();
    const abort = new AbortController();
    [this.#player, this.#readAbort] = [player, abort];
    const reading: Reading = { reply, choice, loading: true };
    this.reading = reading;
    delete reply.readError;
    reply.readAloud = 'reading aloud…';
    this.status = 'Reading the reply aloud…';
    this.#update();
    try {
      const audio = await requestSpeech(
        this.client,
        {
          model: this.speech.id,
          input: reply.choices[choice]!.slice(0, MAX_SPEECH_INPUT),
          voice: this.speech.voices[0] ?? 'alloy',
          response_format: 'pcm',
        },
        {
          signal: abort.signal,
          player,
          onProgress: (progress) => {
            reply.readAloud = `first audio ${progress.firstAudioMs} ms`;
            this.#update();
          },
        },
      );
      reading.loading = false;
      reply.readAloud = `read aloud: ${audio.streamedSeconds.toFixed(2)} s of audio, first after ${audio.firstAudioMs ?? '–'} ms`;
      this.status = `Read aloud: ${audio.streamedSeconds.toFixed(2)} s of audio.`;
      this.#update();
      await player.ended();
    } catch (error) {
      if (abort.signal.aborted) {
        if (reading.loading) reply.readAloud = 'reading aloud stopped';
      } else {
        reply.readError = `Could not read it aloud: ${(error as Error).message}`;
        this.status = 'Reading aloud failed.';
        delete reply.readAloud;
      }
    } finally {
      // Unless another reading took over meanwhile.
      if (this.#player === player) this.#stopReading();
      this.#update();
    }
  }

  #stopReading() {
    this.#readAbort?.abort();
    this.#player?.stop();
    [this.#player, this.#readAbort] = [undefined, undefined];
    this.reading = undefined;
  }

  /** Redraws the conversation after a reply changed in place. */
  #update() {
    this.turns = [...this.turns];
  }

  /** A reasoning model's thought, folded above its answer. */
  #renderThought(thought: string | undefined) {
    if (!thought) return nothing;
    return html`<details class="thought">
      <summary>Thought</summary>
      <p>${thought}</p>
    </details>`;
  }

  /** The structured-output editor, folded; its summary says which mode is on. */
  #renderOutputMode() {
    const state = this.mode === 'text' ? nothing : html`<span class="state"> · ${MODE_NAMES[this.mode]}</span>`;
    return html`<details>
      <summary>Structured output${state}</summary>
      <div class="params">
        <div class="grid">
          <div>
            <label for="mode">Response format</label>
            <select
              id="mode"
              @change=${(e: Event) => (this.mode = (e.target as HTMLSelectElement).value as OutputMode)}
            >
              <option value="text">Text</option>
              <option value="json_object">JSON object</option>
              <option value="json_schema">JSON schema</option>
            </select>
          </div>
          <div>
            <label for="example">Example schema</label>
            <select id="example" ?disabled=${this.mode !== 'json_schema'} @change=${this.#pickExample}>
              <option value="">Pick one…</option>
              ${Object.keys(SCHEMA_EXAMPLES).map((name) => html`<option value=${name}>${name}</option>`)}
            </select>
          </div>
        </div>
        <div class="wide">
          <label for="schema">JSON schema</label>
          <textarea
            id="schema"
            class="json"
            rows="6"
            ?disabled=${this.mode !== 'json_schema'}
            .value=${JSON.stringify(SCHEMA_EXAMPLES.weather, null, 2)}
          ></textarea>
        </div>
      </div>
    </details>`;
  }

  /** The tools editor, folded; its summary says whether tools are declared. */
  #renderTools() {
    const names = this.#declaredNames();
    return html`<details>
      <summary>Tools${this.useTools ? html`<span class="state"> · declared</span>` : nothing}</summary>
      <div class="params">
        <div class="row">
          <input
            id="use-tools"
            type="checkbox"
            style="width: auto"
            .checked=${this.useTools}
            @change=${(e: Event) => (this.useTools = (e.target as HTMLInputElement).checked)}
          />
          <label for="use-tools">Declare tools</label>
        </div>
        <div class="grid">
          <div>
            <label for="tool-choice">tool_choice</label>
            <select id="tool-choice" ?disabled=${!this.useTools}>
              <option value="auto">auto</option>
              <option value="required">required</option>
              <option value="none">none</option>
              ${names.map((name) => html`<option value=${`function:${name}`}>${name}</option>`)}
            </select>
          </div>
          <div class="row">
            <input id="parallel" type="checkbox" style="width: auto" checked ?disabled=${!this.useTools} />
            <label for="parallel">parallel_tool_calls</label>
          </div>
        </div>
        <div class="wide">
          <label for="tools">Tools (JSON)</label>
          <textarea
            id="tools"
            class="json"
            rows="6"
            ?disabled=${!this.useTools}
            .value=${JSON.stringify(TOOL_EXAMPLE, null, 2)}
            @change=${() => this.requestUpdate()}
          ></textarea>
        </div>
      </div>
    </details>`;
  }

  /** The names of the declared tools, for the named choices of tool_choice (none while the JSON does not parse). */
  #declaredNames(): string[] {
    const box = this.renderRoot?.querySelector('#tools') as HTMLTextAreaElement | null;
    try {
      return parseTools(box?.value ?? JSON.stringify(TOOL_EXAMPLE)).map((t) => t.function.name);
    } catch {
      return [];
    }
  }

  /** Whether the last reply's calls wait for their results: the conversation goes on from those, not from a message. */
  #waitingForResults(): boolean {
    const last = this.turns.at(-1);
    return last?.role === 'assistant' && (last.reply.toolCalls[0]?.length ?? 0) > 0;
  }

  /** The results of a reply's calls, entered in the chat tab: they join the conversation, which goes on. */
  #answer(calls: ToolCallView[], results: string[]) {
    if (this.busy) return;
    this.turns = [...this.turns, ...calls.map((call, i) => ({ role: 'tool' as const, call, content: results[i]! }))];
    void this.#reply();
  }

  #pickExample(event: Event) {
    const name = (event.target as HTMLSelectElement).value;
    const example = SCHEMA_EXAMPLES[name];
    if (example)
      (this.renderRoot.querySelector('#schema') as HTMLTextAreaElement).value = JSON.stringify(example, null, 2);
  }

  #renderCheck(check: { valid: boolean; message: string } | undefined) {
    if (!check) return nothing;
    return html`<p class="check ${check.valid ? 'valid' : 'invalid'}">${check.valid ? '✓' : '✗'} ${check.message}</p>`;
  }

  #value(id: string): string {
    return (this.renderRoot.querySelector(`#${id}`) as HTMLInputElement | HTMLTextAreaElement).value.trim();
  }

  #canRegenerate(): boolean {
    return this.turns.at(-1)?.role === 'assistant';
  }

  /** A client, a model to send to (the list arrives after the client: sending before it was a 400), nothing running. */
  #canSend(): boolean {
    return this.client !== undefined && this.models.length > 0 && !this.busy;
  }

  #send(event: Event) {
    event.preventDefault();
    const box = this.renderRoot.querySelector('#message') as HTMLTextAreaElement;
    if (this.#sendText(box.value.trim())) box.value = '';
  }

  /** Sends `content` (with the attached images) as the next user turn; false when there is nothing to send yet. */
  #sendText(content: string): boolean {
    if ((!content && !this.attached.length) || !this.#canSend()) return false;
    this.turns = [...this.turns, { role: 'user', content, images: this.attached }];
    this.attached = [];
    void this.#reply();
    return true;
  }

  /** The images attached to the next message, each with a button that takes it off. */
  #renderAttached() {
    if (!this.attached.length) return nothing;
    return html`<ul class="attached" aria-label="Attached images">
      ${this.attached.map(
        (url, i) =>
          html`<li>
            <img class="thumb" src=${url} alt=${`Attached image ${i + 1}`} />
            <button
              type="button"
              class="secondary"
              aria-label=${`Remove image ${i + 1}`}
              @click=${() => (this.attached = this.attached.filter((_, j) => j !== i))}
            >
              ×
            </button>
          </li>`,
      )}
    </ul>`;
  }

  #pick(event: Event) {
    const input = event.target as HTMLInputElement;
    void this.#attach([...(input.files ?? [])]);
    input.value = '';
  }

  /** An image pasted into the message box (a screenshot, a copied picture) is attached; pasted text stays text. */
  #paste(event: ClipboardEvent) {
    const images = [...(event.clipboardData?.files ?? [])].filter((f) => f.type.startsWith('image/'));
    if (!images.length) return;
    event.preventDefault();
    void this.#attach(images);
  }

  async #attach(files: File[]) {
    const urls = await Promise.all(
      files
        .filter((f) => f.type.startsWith('image/'))
        .map(
          (file) =>
            new Promise<string>((resolve, reject) => {
              const reader = new FileReader();
              reader.onload = () => resolve(reader.result as string);
              reader.onerror = () => reject(reader.error ?? new Error(`could not read ${file.name}`));
              reader.readAsDataURL(file);
            }),
        ),
    );
    this.attached = [...this.attached, ...urls];
  }

  #regenerate() {
    if (!this.#canRegenerate()) return;
    this.turns = this.turns.slice(0, -1);
    void this.#reply();
  }

  #clear() {
    this.turns = [];
    this.status = 'Conversation cleared.';
  }

  /** The conversation as API messages: the system prompt, then each turn (the first choice of each reply). */
  #messages(): OpenAI.ChatCompletionMessageParam[] {
    const system = this.#value('system');
    const history = this.turns.map((turn): OpenAI.ChatCompletionMessageParam => {
      if (turn.role === 'user') {
        if (!turn.images.length) return { role: 'user', content: turn.content };
        const images = turn.images.map((url) => ({ type: 'image_url' as const, image_url: { url } }));
        return {
          role: 'user',
          content: [...(turn.content ? [{ type: 'text' as const, text: turn.content }] : []), ...images],
        };
      }
      if (turn.role === 'tool') return { role: 'tool', tool_call_id: turn.call.id, content: turn.content };
      const calls = turn.reply.toolCalls[0] ?? [];
      // The thought goes back too, as reasoning servers take it: the model's template decides whether it sees it.
      const thought = turn.reply.thoughts[0] ? { reasoning_content: turn.reply.thoughts[0] } : {};
      if (!calls.length) return { role: 'assistant', content: turn.reply.choices[0] ?? '', ...thought };
      const toolCalls = calls.map((c) => ({
        id: c.id,
        type: 'function' as const,
        function: { name: c.name, arguments: c.arguments },
      }));
      return { role: 'assistant', content: turn.reply.choices[0] || null, tool_calls: toolCalls, ...thought };
    });
    return system ? [{ role: 'system', content: system }, ...history] : history;
  }

  #parameters() {
    const number = (id: string) => (this.#value(id) === '' ? undefined : Number(this.#value(id)));
    const stop = this.#value('stop')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    return {
      model: this.#value('model'),
      temperature: number('temperature'),
      top_p: number('top_p'),
      max_tokens: number('max_tokens'),
      n: number('n'),
      seed: number('seed'),
      ...(stop.length && { stop }),
      ...(this.#value('reasoning-effort') && { reasoning_effort: this.#value('reasoning-effort') as 'none' }),
      ...(this.mode !== 'text' && { response_format: responseFormat(this.mode, this.#value('schema')) }),
      ...(this.useTools && {
        tools: parseTools(this.#value('tools')),
        tool_choice: toolChoice(this.#value('tool-choice')),
        parallel_tool_calls: (this.renderRoot.querySelector('#parallel') as HTMLInputElement).checked,
      }),
    };
  }

  async #reply() {
    if (!this.client) return;
    const reply: Reply = { choices: [], finishReasons: [], toolCalls: [], thoughts: [], done: false };
    const messages = this.#messages();
    const [mode, schemaText] = [this.mode, this.#value('schema')];
    this.turns = [...this.turns, { role: 'assistant', reply }];
    this.busy = true;
    this.status = 'The assistant is replying…';
    this.#abort = new AbortController();
    const sent = performance.now();
    let firstAt: number | undefined;
    const update = () => (this.turns = [...this.turns]);
    try {
      const stream = await this.client.chat.completions.create(
        { ...this.#parameters(), messages, stream: true, stream_options: { include_usage: true } },
        { signal: this.#abort.signal },
      );
      for await (const chunk of stream) {
        for (const choice of chunk.choices) {
          const text = choice.delta.content ?? '';
          // Reasoning servers' field, which the SDK's types do not declare.
          const thought = (choice.delta as { reasoning_content?: string }).reasoning_content ?? '';
          if (thought) reply.thoughts[choice.index] = (reply.thoughts[choice.index] ?? '') + thought;
          if ((text || thought) && firstAt === undefined) {
            firstAt = performance.now();
            reply.firstTokenMs = Math.round(firstAt - sent);
          }
          reply.choices[choice.index] = (reply.choices[choice.index] ?? '') + text;
          for (const call of choice.delta.tool_calls ?? [])
            addToolCallDelta((reply.toolCalls[choice.index] ??= []), call);
          if (choice.finish_reason) reply.finishReasons[choice.index] = choice.finish_reason;
        }
        if (chunk.usage) {
          reply.completionTokens = chunk.usage.completion_tokens;
          const seconds = firstAt === undefined ? 0 : (performance.now() - firstAt) / 1000;
          if (seconds > 0) reply.tokensPerSecond = Math.round(chunk.usage.completion_tokens / seconds);
        }
        update();
      }
      if (this.#abort.signal.aborted) throw new Error('Stopped.');
      if (mode !== 'text') {
        // Checked here too, in the page, with its own validator: what the API promised is what arrived.
        reply.checks = reply.choices.map((text, i) =>
          reply.finishReasons[i] === 'stop' ? checkReply(mode, schemaText, text) : undefined,
        );
      }
      this.status = `Reply complete: ${reply.completionTokens ?? 0} tokens.`;
    } catch (error) {
      const aborted = this.#abort.signal.aborted;
      reply.error = aborted ? 'Stopped.' : (error as Error).message;
      this.status = aborted ? 'Stopped.' : 'The request failed.';
    } finally {
      reply.done = true;
      this.busy = false;
      update();
    }
  }
}

customElements.define('chat-panel', ChatPanel);
