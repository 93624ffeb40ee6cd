import type { ChatChoice, ChatEvent, FinishReason, FunctionCall, GeneratedTokenLogprob } from '../../engine/index.ts';
import { invalidOutput } from '../generation/output-constraint.ts';
import { replyViolation, type ReplyConstraint } from '../generation/reply-constraint.ts';
import { ReplyParser } from './reply-parser.ts';
import type { ToolPrompt } from './tool-prompt.ts';

export interface ChoiceOutputOptions {
  /** Receives the choice's events as they happen. */
  onEvent?: ((event: ChatEvent) => void) | undefined;
  /** What the finished reply must be: checked before its end is reported. */
  constraint?: ReplyConstraint | undefined;
  /** Report log probabilities: each text delta carries those of the tokens it holds. */
  logprobs?: boolean;
}

/**
 * One choice's output as an engine reports it: the text it generates (after stop sequences), read for tool calls
 * when the request allows them, as chat events in order, then its end, checked against the choice's constraint. Both
 * engines write through it, so a reply means the same events and the same guarantee whichever engine made it.
 */
export class ChoiceOutput {
  readonly #choice: number;
  readonly #parser: ReplyParser | null;
  readonly #onEvent: ((event: ChatEvent) => void) | undefined;
  readonly #constraint: ReplyConstraint | undefined;
  readonly #logprobs: GeneratedTokenLogprob[] | undefined;
  /** Log probabilities of tokens whose text has not been reported yet. */
  #pending: GeneratedTokenLogprob[] = [];
  #text = '';
  /** Set when the choice has ended. */
  finishReason: FinishReason | null = null;

  constructor(choice: number, calls: ToolPrompt['calls'], options: ChoiceOutputOptions = {}) {
    this.#choice = choice;
    this.#parser = calls ? new ReplyParser(calls.syntax, calls) : null;
    this.#onEvent = options.onEvent;
    this.#constraint = options.constraint;
    this.#logprobs = options.logprobs ? [] : undefined;
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

  /**
   * Reports the next piece of generated text, with the log probabilities of the tokens that produced it (they go out
   * with the text delta that holds them; those of a call's tokens are not reported, as the OpenAI API lists the
   * content's tokens only).
   */
  write(text: string, tokens: GeneratedTokenLogprob[] = []): void {
    if (this.#logprobs) this.#pending.push(...tokens);
    if (!text) return;
    if (!this.#parser) {
      this.#text += text;
      this.#delta(text);
      return;
    }
    this.#report(this.#parser.push(text));
  }

  /**
   * Ends the choice: what the parser held back goes out; a reply that ended on its own must satisfy its constraint
   * (otherwise an `invalid_output` error, never an invalid answer reported as done); then the finish, `tool_calls`
   * for a reply that called.
   */
  finish(reason: FinishReason): void {
    if (this.finishReason) return;
    if (this.#parser) this.#report(this.#parser.end());
    const why =
      this.#constraint && reason === 'stop'
        ? replyViolation(this.#constraint, { text: this.text, toolCalls: this.toolCalls })
        : undefined;
    if (why) throw invalidOutput(this.#choice, why);
    this.finishReason = reason === 'stop' && this.toolCalls.length ? 'tool_calls' : reason;
    this.#onEvent?.({ type: 'finish', choice: this.#choice, reason: this.finishReason });
  }

  /** The finished choice. */
  result(): ChatChoice {
    const calls = this.toolCalls;
    return {
      text: this.text,
      finishReason: this.finishReason ?? 'length',
      ...(calls.length && { toolCalls: calls }),
      ...(this.#logprobs && { logprobs: this.#logprobs }),
    };
  }

  #delta(text: string) {
    const tokens = this.#pending.splice(0);
    this.#logprobs?.push(...tokens);
    this.#onEvent?.({ type: 'delta', choice: this.#choice, text, ...(this.#logprobs && { logprobs: tokens }) });
  }

  #report(events: ReturnType<ReplyParser['push']>) {
    const choice = this.#choice;
    for (const event of events) {
      if (event.type === 'text') this.#delta(event.text);
      else {
        // The tokens written so far went into the call.
        this.#pending.length = 0;
        if (event.type === 'call') this.#onEvent?.({ type: 'tool_call', choice, index: event.index, name: event.name });
        else this.#onEvent?.({ type: 'tool_arguments', choice, index: event.index, text: event.text });
      }
    }
  }
}
