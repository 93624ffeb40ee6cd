import { css, html, LitElement } from 'lit';
import type OpenAI from 'openai';
import { panelStyles } from './styles.ts';

/** A call the assistant made, as the chat tab shows it: accumulated from the stream's deltas. */
export interface ToolCallView {
  id: string;
  name: string;
  arguments: string;
}

/** The tools the chat tab declares unless edited: the ones the bundled model was trained to call. */
export const TOOL_EXAMPLE: OpenAI.ChatCompletionFunctionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Get the current weather in a city.',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string', description: 'The city name.' } },
        required: ['city'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'get_time',
      description: 'Get the local time in a city.',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string', description: 'The city name.' } },
        required: ['city'],
        additionalProperties: false,
      },
    },
  },
];

/** The `tools` of a request from the chat tab's text; throws with a readable message when it is not a JSON array. */
export function parseTools(text: string): OpenAI.ChatCompletionFunctionTool[] {
  let tools: unknown;
  try {
    tools = JSON.parse(text);
  } catch (error) {
    throw new Error(`The tools are not JSON: ${(error as Error).message}`, { cause: error });
  }
  if (!Array.isArray(tools)) throw new Error('The tools are a JSON array of {"type": "function", "function": {…}}.');
  return tools as OpenAI.ChatCompletionFunctionTool[];
}

/** The `tool_choice` of the chat tab's select: `auto`, `none`, `required`, or `function:NAME` for a named one. */
export function toolChoice(value: string): OpenAI.ChatCompletionToolChoiceOption {
  if (value.startsWith('function:')) return { type: 'function', function: { name: value.slice('function:'.length) } };
  return value as 'auto' | 'none' | 'required';
}

/** Adds a streamed tool-call delta to a choice's calls, as the openai SDK accumulates them (by `index`). */
export function addToolCallDelta(calls: ToolCallView[], delta: OpenAI.ChatCompletionChunk.Choice.Delta.ToolCall) {
  const call = (calls[delta.index] ??= { id: '', name: '', arguments: '' });
  if (delta.id) call.id = delta.id;
  if (delta.function?.name) call.name = delta.function.name;
  call.arguments += delta.function?.arguments ?? '';
}

/** Arguments shown indented when they are JSON (they always are, from Lantern), as they came otherwise. */
const pretty = (text: string) => {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
};

/**
 * The calls of an assistant reply, each with its name and arguments, and, while they wait for their results, a field
 * per call and a button that sends them (an `answer` event whose detail is one result per call, in order).
 */
export class ToolCallsView extends LitElement {
  static override styles = [
    panelStyles,
    css`
      ol {
        list-style: none;
        padding: 0;
        margin: 0.5rem 0 0;
        display: grid;
        gap: 0.5rem;
      }
      li {
        border-left: 3px solid var(--accent);
        padding-left: 0.6rem;
      }
      pre {
        margin: 0.25rem 0;
        font-family: ui-monospace, monospace;
        white-space: pre-wrap;
      }
      .name {
        font-family: ui-monospace, monospace;
        font-weight: 700;
      }
    `,
  ];
  static override properties = {
    calls: { attribute: false },
    answering: { type: Boolean },
  };

  declare calls: ToolCallView[];
  /** Whether the calls wait for their results (the last turn of the conversation). */
  declare answering: boolean;

  constructor() {
    super();
    this.calls = [];
    this.answering = false;
  }

  override render() {
    return html`<form @submit=${this.#answer} aria-label="Tool calls">
      <ol>
        ${this.calls.map(
          (call, i) =>
            html`<li class="tool-call">
              <span class="name">${call.name}</span>
              <pre class="arguments" aria-label=${`Arguments of ${call.name}`}>${pretty(call.arguments)}</pre>
              ${
                this.answering
                  ? html`<label for=${`result-${i}`}>Result of ${call.name}</label>
                      <textarea
                        id=${`result-${i}`}
                        rows="2"
                        placeholder='{"temperature": 18, "condition": "sunny"}'
                      ></textarea>`
                  : ''
              }
            </li>`,
        )}
      </ol>
      ${this.answering ? html`<button type="submit">Send results</button>` : ''}
    </form>`;
  }

  #answer(event: Event) {
    event.preventDefault();
    const results = this.calls.map(
      (_, i) => (this.renderRoot.querySelector(`#result-${i}`) as HTMLTextAreaElement).value.trim() || '{}',
    );
    this.dispatchEvent(new CustomEvent('answer', { detail: results }));
  }
}

customElements.define('tool-calls-view', ToolCallsView);
