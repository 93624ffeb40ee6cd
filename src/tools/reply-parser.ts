import type { FunctionCall } from '../engine-interface/index.ts';
import type { ToolCallSyntax } from './tool-call-syntax.ts';

/** What the reply parser makes of the text a model generates: reply text, the start of a call, argument fragments. */
export type ReplyEvent =
  | { type: 'text'; text: string }
  | { type: 'call'; index: number; name: string }
  | { type: 'arguments'; index: number; text: string };

export interface ReplyParserOptions {
  /** The declared functions: a call of any other name stays text. */
  names: ReadonlySet<string>;
  /** Most calls to read (1 when parallel calls are off); the reply is `done` once the last of them is closed. */
  maxCalls?: number;
}

/**
 * Reads tool calls out of a reply as it is generated, in a model family's syntax, so that each call can be streamed
 * as OpenAI streams it: its start (index and name) as soon as the name is complete, then its arguments as they are
 * written. Text around calls passes through, except the white space that separates it from them; text that might
 * still become a call marker is held back until it cannot.
 *
 * A call is reported only once its name is known and declared. What does not read as a call (no JSON object, no
 * declared name) is given back as text, so a reply is never lost; that the calls are valid is the constraint's job.
 *
 * @example
 * const parser = new ReplyParser(HERMES, { names: new Set(['get_weather']) });
 * parser.push('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>');
 * // → [{ type: 'call', index: 0, name: 'get_weather' }, { type: 'arguments', index: 0, text: '{"city": "Paris"}' }]
 */
export class ReplyParser {
  readonly #argumentsKey: string;
  readonly #names: ReadonlySet<string>;
  readonly #maxCalls: number;
  /** The markers without their white space (`<tool_call>`, `</tool_call>`); empty for bare JSON calls. */
  readonly #open: string;
  readonly #close: string;
  /** Text held back: trailing white space, or what may be the start of a marker. */
  #pending = '';
  #call: CallScanner | null = null;
  /** A call was just read: its close marker is expected. */
  #awaitClose = false;
  /** White space after a call separates it from what follows: dropped. */
  #dropSpace = false;
  /** Nothing more can be a call: the rest is text. */
  #textOnly = false;
  #out: ReplyEvent[] = [];
  /** The reply's text, without the calls. */
  text = '';
  readonly calls: FunctionCall[] = [];

  constructor(syntax: ToolCallSyntax, options: ReplyParserOptions) {
    this.#argumentsKey = syntax.argumentsKey;
    this.#names = options.names;
    this.#maxCalls = Math.min(options.maxCalls ?? Infinity, syntax.parallel ? Infinity : 1);
    this.#open = syntax.open.trim();
    this.#close = syntax.close.trim();
  }

  /** True once the reply can hold no more calls and the last one is closed: generation may stop. */
  get done(): boolean {
    return this.calls.length >= this.#maxCalls && this.#call === null && !this.#awaitClose;
  }

  /** Reads the next piece of generated text; returns what it completes. */
  push(piece: string): ReplyEvent[] {
    this.#read(piece);
    return this.#take();
  }

  /**
   * The reply has ended: held-back text goes out, and a call cut short keeps what it had. `cut`: by the token limit,
   * when a call begun but cut before its name is not text either (its opening is no answer; the choice's
   * `finish_reason: "length"` tells the client), where a reply that ended there on its own gives it back as text.
   */
  end(cut = false): ReplyEvent[] {
    const call = this.#call;
    this.#call = null;
    if (call?.started) this.#finishCall(call);
    else if (call && !cut) this.#pending = call.raw + this.#pending;
    // After calls, white space (or a close marker cut short) is nothing; otherwise all of it is reply text.
    if (!(this.calls.length && (this.#pending.trim() === '' || this.#awaitClose))) this.#emitText(this.#pending);
    this.#pending = '';
    return this.#take();
  }

  #take(): ReplyEvent[] {
    const out = this.#out;
    this.#out = [];
    return out;
  }

  #emitText(text: string) {
    if (!text) return;
    this.text += text;
    const last = this.#out.at(-1);
    if (last?.type === 'text') last.text += text;
    else this.#out.push({ type: 'text', text });
  }

  #read(text: string) {
    let rest = text;
    while (rest) {
      if (this.#call) {
        const used = this.#feedCall(this.#call, rest);
        rest = rest.slice(used);
        continue;
      }
      this.#pending += rest;
      rest = '';
      if (this.#awaitClose) {
        // The close marker ends the call; wait while it may still be coming. A call without one just ends.
        const trimmed = this.#pending.trimStart();
        if (!trimmed.startsWith(this.#close) && this.#close.startsWith(trimmed)) continue;
        this.#pending = trimmed.startsWith(this.#close) ? trimmed.slice(this.#close.length) : trimmed;
        this.#awaitClose = false;
      }
      if (this.#dropSpace) {
        this.#pending = this.#pending.trimStart();
        if (!this.#pending) continue;
        this.#dropSpace = false;
      }
      if (this.#textOnly || this.calls.length >= this.#maxCalls) {
        this.#textOnly = true;
        this.#release('');
        continue;
      }
      if (!this.#open) {
        // A bare JSON call is the whole reply: it begins with `{` after any white space, or there is no call.
        const start = this.#pending.length - this.#pending.trimStart().length;
        if (start === this.#pending.length) continue;
        if (this.text !== '' || this.#pending[start] !== '{') {
          this.#textOnly = true;
          this.#release('');
          continue;
        }
        rest = this.#beginCall(start, '');
        continue;
      }
      const at = this.#pending.indexOf(this.#open);
      if (at >= 0) rest = this.#beginCall(at, this.#open);
      else this.#release(this.#open);
    }
  }

  /** Gives out the pending text except trailing white space and a trailing partial `marker`, which stay pending. */
  #release(marker: string) {
    let cut = this.#pending.trimEnd().length;
    for (let n = Math.min(marker.length - 1, this.#pending.length); n > 0; n--) {
      if (this.#pending.endsWith(marker.slice(0, n))) {
        cut = this.#pending.slice(0, -n).trimEnd().length;
        break;
      }
    }
    this.#emitText(this.#pending.slice(0, cut));
    this.#pending = this.#pending.slice(cut);
  }

  /** A call's marker starts at `at` in the pending text: the text before goes out; returns what follows the marker. */
  #beginCall(at: number, marker: string): string {
    const before = this.#pending.slice(0, at);
    const after = this.#pending.slice(at + marker.length);
    const kept = before.trimEnd();
    this.#emitText(kept);
    this.#pending = '';
    this.#call = new CallScanner(this.#argumentsKey, before.slice(kept.length) + marker);
    return after;
  }

  /** Feeds `text` to the call being read until the call ends; returns how much of `text` it used. */
  #feedCall(call: CallScanner, text: string): number {
    let used = 0;
    while (used < text.length && !call.complete && !call.failed) call.feed(text[used++]!);
    if (!call.started && !call.failed && call.name !== undefined) {
      if (this.#names.has(call.name)) {
        call.started = true;
        this.#out.push({ type: 'call', index: this.calls.length, name: call.name });
        this.calls.push({ name: call.name, arguments: '' });
      } else call.failed = true;
    }
    if (call.failed || (call.complete && !call.started)) {
      // Not a call after all (no JSON object, or no declared name): what was read is text, and so is the rest.
      this.#call = null;
      this.#textOnly = true;
      this.#pending = call.raw;
      return used;
    }
    this.#emitArguments(call);
    if (call.complete) {
      this.#call = null;
      this.#finishCall(call);
      this.#awaitClose = this.#close !== '';
      this.#dropSpace = true;
      if (!this.#close) this.#textOnly = true;
    }
    return used;
  }

  #emitArguments(call: CallScanner) {
    const text = call.takeArguments();
    if (!text) return;
    const index = this.calls.length - 1;
    this.calls[index]!.arguments += text;
    this.#out.push({ type: 'arguments', index, text });
  }

  /** A call ends; one written without arguments takes none (`{}`). */
  #finishCall(call: CallScanner) {
    this.#emitArguments(call);
    const last = this.calls.at(-1)!;
    if (!call.sawArguments && last.arguments === '') {
      last.arguments = '{}';
      this.#out.push({ type: 'arguments', index: this.calls.length - 1, text: '{}' });
    }
  }
}

/**
 * Scans one call object (`{"name": "f", "arguments": {...}}`) character by character: its top-level keys, the name's
 * value once complete, and the text of the arguments value as it grows.
 */
class CallScanner {
  readonly #argumentsKey: string;
  /** Everything read for this call, marker included: given back as text if it is no call. */
  raw: string;
  name: string | undefined;
  started = false;
  complete = false;
  failed = false;
  sawArguments = false;
  #depth = 0;
  #inString = false;
  #escape = false;
  /** At depth 1: a key is expected, being read, or its value. */
  #expectKey = false;
  #key: string | undefined;
  #keyText = '';
  #readingKey = false;
  #afterColon = false;
  /** The current top-level value's text while it is being read. */
  #value: string | null = null;
  #valueIsArguments = false;
  /** The arguments text read but not yet taken. */
  #argumentsPending = '';

  constructor(argumentsKey: string, raw: string) {
    this.#argumentsKey = argumentsKey;
    this.raw = raw;
  }

  /** Arguments text read since the last call. */
  takeArguments(): string {
    const text = this.#argumentsPending;
    this.#argumentsPending = '';
    return text;
  }

  feed(c: string) {
    this.raw += c;
    if (this.#depth === 0) {
      if (c === '{') {
        this.#depth = 1;
        this.#expectKey = true;
      } else if (!/\s/.test(c)) this.failed = true;
      return;
    }
    if (this.#value !== null) this.#appendValue(c);
    if (this.#inString) {
      if (this.#escape) this.#escape = false;
      else if (c === '\\') this.#escape = true;
      else if (c === '"') {
        this.#inString = false;
        if (this.#readingKey) {
          this.#readingKey = false;
          this.#key = parseJson(this.#keyText + '"') as string | undefined;
        } else if (this.#depth === 1 && this.#value !== null) this.#endValue();
      }
      if (this.#readingKey && this.#inString) this.#keyText += c;
      return;
    }
    switch (c) {
      case '"':
        this.#inString = true;
        if (this.#depth === 1 && this.#expectKey) {
          this.#expectKey = false;
          this.#readingKey = true;
          this.#keyText = '"';
        } else if (this.#depth === 1 && this.#afterColon && this.#value === null) this.#beginValue(c);
        return;
      case ':':
        if (this.#depth === 1) this.#afterColon = true;
        return;
      case '{':
      case '[':
        if (this.#depth === 1 && this.#afterColon && this.#value === null) this.#beginValue(c);
        this.#depth += 1;
        return;
      case '}':
      case ']':
        this.#depth -= 1;
        if (this.#depth === 1 && this.#value !== null) this.#endValue();
        else if (this.#depth === 0) {
          if (this.#value !== null) this.#endValue(true);
          this.complete = true;
        }
        return;
      case ',':
        if (this.#depth === 1) {
          if (this.#value !== null) this.#endValue(true);
          this.#expectKey = true;
          this.#afterColon = false;
        }
        return;
      default:
        // The first character of a number, true, false or null at the top level.
        if (this.#depth === 1 && this.#afterColon && this.#value === null && !/\s/.test(c)) this.#beginValue(c);
    }
  }

  #beginValue(first: string) {
    this.#value = first;
    this.#valueIsArguments = this.#key === this.#argumentsKey;
    if (this.#valueIsArguments) {
      this.sawArguments = true;
      this.#argumentsPending += first;
    }
  }

  #appendValue(c: string) {
    this.#value += c;
    if (this.#valueIsArguments) this.#argumentsPending += c;
  }

  /** The top-level value ends; `dropLast` when the character that ended it (`,` or `}`) is not part of it. */
  #endValue(dropLast = false) {
    let value = this.#value!;
    if (dropLast) {
      value = value.slice(0, -1).trimEnd();
      if (this.#valueIsArguments) {
        this.#argumentsPending = this.#argumentsPending.slice(0, -1);
        this.#argumentsPending = this.#argumentsPending.trimEnd();
      }
    }
    if (this.#key === 'name') {
      const name = parseJson(value);
      if (typeof name === 'string') this.name = name;
      else this.failed = true;
    }
    this.#value = null;
    this.#valueIsArguments = false;
    this.#afterColon = false;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
