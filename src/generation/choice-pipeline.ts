import type {
  ChatEvent,
  FinishReason,
  FunctionCall,
  GeneratedTokenLogprob,
  OutputConstraint,
} from '../engine-interface/index.ts';
import { ReplyParser, type ReplyEvent } from '../tools/reply-parser.ts';
import type { ToolPrompt } from '../tools/tool-prompt.ts';
import { IncrementalDecoder } from './incremental-decoder.ts';
import { invalidOutput, violation } from '../grammar/output-constraint.ts';
import { StopSequenceMatcher } from './stop-sequences.ts';
import { ThoughtSplitter } from './thought-splitter.ts';

export interface ChoicePipelineOptions {
  /** Receives the choice's events as they happen. */
  onEvent?: ((event: ChatEvent) => void) | undefined;
  /** Strings that end the choice when generated; never part of its text. */
  stop?: readonly string[];
  /** How to read calls in the reply (see `toolPrompt`); absent when it may hold none. */
  calls?: ToolPrompt['calls'];
  /** What the finished reply must be: checked before its end is reported. */
  constraint?: OutputConstraint | undefined;
  /** Report log probabilities: each text delta carries those of the tokens it holds. */
  logprobs?: boolean;
  /**
   * For engines that feed token ids: decodes ids to text, skipping special tokens (an incremental decoder holds back a
   * token that ends inside a character until the character is complete).
   */
  decode?: (ids: number[]) => string;
  /** For engines that feed token ids: the tokens that end a reply (they have no text, and no log probability is listed). */
  endTokens?: ReadonlySet<number>;
  /** For engines that feed token ids: the most tokens the choice may generate (its end token included). */
  maxTokens?: number;
  /**
   * The reply opens with a reasoning model's thought (`<think>…</think>`): it goes out as `reasoning` events, without
   * its tags; stop sequences, calls, log probabilities and the constraint apply to the answer after it.
   */
  reasoning?: boolean;
}

/**
 * One choice's way from generated tokens (or text) to chat events, the same for every engine: tokens are decoded with
 * UTF-8 held back until a character is complete; stop sequences are matched across tokens, holding back what may
 * still become one; tool calls are read out of the reply when the request allows them; log probabilities go out with
 * the text delta that holds their tokens (those of a call's tokens are not reported, as the OpenAI API lists the
 * content's tokens only); and when the choice ends, what was held is released in order (an unfinished character, then
 * text that might have begun a stop sequence, then what the call reader held), a reply that ended on its own is
 * checked against its constraint (an `invalid_output` error, never an invalid answer reported as done), and the finish
 * is reported (`tool_calls` for a reply that called).
 *
 * An engine feeds it what it generates — `pushToken()` for engines whose tokens Lantern sees, `pushText()` for libraries
 * that decode themselves — and stops the choice when either returns true (a stop sequence matched, the reply made every
 * call it may, or the token limit was reached); it calls `end()` when the engine itself ended the choice.
 */
export class ChoicePipeline {
  readonly #choice: number;
  readonly #onEvent: ((event: ChatEvent) => void) | undefined;
  readonly #stops: StopSequenceMatcher;
  readonly #parser: ReplyParser | null;
  readonly #constraint: OutputConstraint | undefined;
  readonly #decoder: IncrementalDecoder | undefined;
  readonly #endTokens: ReadonlySet<number>;
  readonly #maxTokens: number;
  /** Log probabilities of tokens whose text has not been reported yet; undefined when none were asked for. */
  readonly #pending: GeneratedTokenLogprob[] | undefined;
  /** The reply's text so far, without its calls, when no calls are read (the parser keeps it otherwise). */
  #text = '';
  readonly #thought: ThoughtSplitter | undefined;
  /** Tokens fed so far. */
  tokens = 0;
  /** Of `tokens`, those fed while the model was thinking (pieces of text, for engines that feed text). */
  reasoningTokens = 0;
  /** Set when the choice has ended. */
  finishReason: FinishReason | null = null;

  constructor(choice: number, options: ChoicePipelineOptions = {}) {
    this.#choice = choice;
    this.#onEvent = options.onEvent;
    this.#stops = new StopSequenceMatcher(options.stop ?? []);
    this.#parser = options.calls ? new ReplyParser(options.calls.syntax, options.calls) : null;
    this.#constraint = options.constraint;
    this.#decoder = options.decode && new IncrementalDecoder(options.decode);
    this.#endTokens = options.endTokens ?? new Set();
    this.#maxTokens = options.maxTokens ?? Infinity;
    this.#pending = options.logprobs ? [] : undefined;
    this.#thought = options.reasoning ? new ThoughtSplitter() : undefined;
  }

  /** The reply's text so far, calls excluded. */
  get text(): string {
    return this.#parser ? this.#parser.text : this.#text;
  }

  /** The calls read out of the reply so far. */
  get toolCalls(): FunctionCall[] {
    return this.#parser?.calls ?? [];
  }

  /**
   * A generated token, with its log probability when they were asked for. Returns true when the choice is over: it
   * ended, a stop sequence matched, the reply has made every call it may, or it reached its token limit.
   */
  pushToken(id: number, logprob?: GeneratedTokenLogprob): boolean {
    if (this.finishReason) return true;
    this.tokens += 1;
    if (this.#endTokens.has(id)) {
      this.end('stop');
      return true;
    }
    const answer = this.#answerOf(this.#decoder!.push(id));
    if (logprob && this.#answering) this.#pending?.push(logprob);
    if (this.#emit(this.#stops.push(answer))) return true;
    if (this.tokens < this.#maxTokens) return false;
    this.end('length');
    return true;
  }

  /**
   * Generated text from an engine that decodes it itself, with the log probabilities of the tokens it holds. Returns
   * true when the choice is over (as `pushToken`).
   */
  pushText(text: string, logprobs: readonly GeneratedTokenLogprob[] = []): boolean {
    if (this.finishReason) return true;
    const answer = this.#answerOf(text);
    if (this.#answering) this.#pending?.push(...logprobs);
    return this.#emit(this.#stops.push(answer));
  }

  /**
   * Ends the choice for `reason` (the engine ended it, or ran out of tokens): what was held back goes out in order, and
   * the end is checked and reported. Nothing happens when it has ended already.
   */
  end(reason: FinishReason): void {
    if (this.finishReason) return;
    const tail = this.#stops.push(this.#answerOf(this.#decoder?.flush() ?? '', true));
    this.#write(tail.text);
    if (tail.stopped) reason = 'stop';
    else this.#write(this.#stops.flush());
    this.#finish(reason);
  }

  /** Whether the model is still thinking: the reply opens with a thought that has not closed. */
  get thinking(): boolean {
    return this.#thought !== undefined && !this.#thought.inAnswer && this.finishReason === null;
  }

  /** Whether what is fed now is the answer's (log probabilities are listed for the answer's tokens only). */
  get #answering(): boolean {
    return this.#thought?.answering ?? true;
  }

  /**
   * The answer's part of a piece of the reply: with a thought, what is thought goes out as `reasoning` and counts as a
   * reasoning token (a piece fed while thinking, the one that closes the thought included). `last`: the reply is over.
   */
  #answerOf(piece: string, last = false): string {
    const thought = this.#thought;
    if (!thought) return piece;
    if (!last && !thought.inAnswer) this.reasoningTokens += 1;
    const split = thought.push(piece);
    const more = last ? thought.flush() : '';
    const text = split.thought + more;
    if (text) this.#onEvent?.({ type: 'reasoning', choice: this.#choice, text });
    return split.answer;
  }

  /** Writes what the stop matcher let through; true when the choice is over. */
  #emit(matched: { text: string; stopped: boolean }): boolean {
    this.#write(matched.text);
    if (matched.stopped) this.#finish('stop');
    // A reply that has made every call it may (one, without parallel calls) is complete.
    else if (this.#parser?.done) this.end('stop');
    return this.finishReason !== null;
  }

  #write(text: string): void {
    if (!text) return;
    if (this.#parser) return this.#report(this.#parser.push(text));
    this.#text += text;
    this.#delta(text);
  }

  /**
   * The end: what the call reader held back goes out; a reply that ended on its own must satisfy its constraint; then
   * the finish event.
   */
  #finish(reason: FinishReason): void {
    if (this.#parser) this.#report(this.#parser.end(reason === 'length'));
    const calls = this.toolCalls;
    const why =
      this.#constraint && reason === 'stop'
        ? violation(this.#constraint, { text: this.text, toolCalls: calls })
        : undefined;
    if (why) throw invalidOutput(this.#choice, why);
    this.finishReason = reason === 'stop' && calls.length ? 'tool_calls' : reason;
    this.#onEvent?.({ type: 'finish', choice: this.#choice, reason: this.finishReason });
  }

  #delta(text: string): void {
    const logprobs = this.#pending?.splice(0);
    this.#onEvent?.({ type: 'delta', choice: this.#choice, text, ...(logprobs && { logprobs }) });
  }

  #report(events: ReplyEvent[]): void {
    const choice = this.#choice;
    for (const event of events) {
      if (event.type === 'text') this.#delta(event.text);
      else {
        // The tokens written so far went into the call.
        if (this.#pending) this.#pending.length = 0;
        if (event.type === 'call') this.#onEvent?.({ type: 'tool_call', choice, index: event.index, name: event.name });
        else this.#onEvent?.({ type: 'tool_arguments', choice, index: event.index, text: event.text });
      }
    }
  }
}
