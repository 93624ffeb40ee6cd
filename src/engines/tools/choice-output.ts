import type { ChatChoice, ChatEvent, FinishReason, FunctionCall } from '../../engine/index.ts';
import { ReplyParser } from './reply-parser.ts';
import type { ToolPrompt } from './tool-prompt.ts';

/**
 * One choice's output as an engine reports it: the text it generates (after stop sequences), read for tool calls
 * when the request allows them, as chat events in order, then its end. Both engines write through it, so a reply means
 * the same events whichever engine made it.
 */
export class ChoiceOutput {
  readonly #choice: number;
  readonly #parser: ReplyParser | null;
  readonly #onEvent: ((event: ChatEvent) => void) | undefined;
  #text = '';
  /** Set when the choice has ended. */
  finishReason: FinishReason | null = null;

  constructor(choice: number, calls: ToolPrompt['calls'], onEvent?: (event: ChatEvent) => void) {
    this.#choice = choice;
    this.#parser = calls ? new ReplyParser(calls.syntax, calls) : null;
    this.#onEvent = onEvent;
  }

  /** The reply's text so far, calls excluded. */
  get text(): string {
    return this.#parser ? this.#parser.text : this.#text;
  }

  get toolCalls(): FunctionCall[] {
    return this.#parser?.calls ?? [];
  }

  /** The reply has made every call it may make: generating more of it would change nothing. */
  get done(): boolean {
    return this.#parser?.done ?? false;
  }

  /** Reports the next piece of generated text. */
  write(text: string): void {
    if (!text) return;
    if (!this.#parser) {
      this.#text += text;
      this.#onEvent?.({ type: 'delta', choice: this.#choice, text });
      return;
    }
    this.#report(this.#parser.push(text));
  }

  /** Ends the choice: what the parser held back goes out, then the finish (`tool_calls` for a reply that called). */
  finish(reason: FinishReason): void {
    if (this.finishReason) return;
    if (this.#parser) this.#report(this.#parser.end());
    this.finishReason = reason === 'stop' && this.toolCalls.length ? 'tool_calls' : reason;
    this.#onEvent?.({ type: 'finish', choice: this.#choice, reason: this.finishReason });
  }

  /** The finished choice. */
  result(): ChatChoice {
    const calls = this.toolCalls;
    return { text: this.text, finishReason: this.finishReason ?? 'length', ...(calls.length && { toolCalls: calls }) };
  }

  #report(events: ReturnType<ReplyParser['push']>) {
    const choice = this.#choice;
    for (const event of events) {
      if (event.type === 'text') this.#onEvent?.({ type: 'delta', choice, text: event.text });
      else if (event.type === 'call')
        this.#onEvent?.({ type: 'tool_call', choice, index: event.index, name: event.name });
      else this.#onEvent?.({ type: 'tool_arguments', choice, index: event.index, text: event.text });
    }
  }
}
