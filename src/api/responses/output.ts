import type { FinishReason, GeneratedTokenLogprob } from '../../engine-interface/index.ts';
import { newId } from '../ids.ts';
import type {
  DeltaLogprob,
  FileCitation,
  FileSearchResult,
  ResponseFileSearchToolCall,
  ItemStatus,
  ResponseFunctionToolCall,
  ResponseLogprob,
  ResponseOutputItem,
  ResponseOutputMessage,
  ResponseReasoningItem,
  ResponseStreamEvent,
} from './wire.ts';

/** An event of a streamed response before its sequence number is given. */
export type UnsequencedEvent = ResponseStreamEvent extends infer E
  ? E extends { sequence_number: number }
    ? Omit<E, 'sequence_number'>
    : never
  : never;

const toLogprob = (t: GeneratedTokenLogprob): ResponseLogprob => ({
  token: t.token,
  bytes: t.bytes,
  logprob: t.logprob,
  top_logprobs: t.topLogprobs.map((top) => ({ token: top.token, bytes: top.bytes, logprob: top.logprob })),
});

const toDeltaLogprob = (t: ResponseLogprob): DeltaLogprob => ({
  token: t.token,
  logprob: t.logprob,
  top_logprobs: t.top_logprobs.map((top) => ({ token: top.token, logprob: top.logprob })),
});

/**
 * A response's output, built from a generation as it runs: a `reasoning` item opened at the first text of a reasoning
 * model's thought, a message item of `output_text` opened at the first text, a `function_call` item per call, each
 * closed when the next begins or the generation ends. Every step is told to `emit` as the events of
 * a streamed response, in OpenAI's order (`output_item.added`, `content_part.added`, deltas, then `…done` events);
 * a non-streamed response runs the same steps and ignores them, so both have the same output.
 */
export class ResponseOutput {
  readonly items: ResponseOutputItem[] = [];
  /** How the generation ended, once it has. */
  finishReason: FinishReason | null = null;
  readonly #emit: (event: UnsequencedEvent) => void;
  /** Whether the thought is also given as its summary (the request's `reasoning.summary`). */
  readonly #summary: boolean;
  #reasoning: { item: ResponseReasoningItem; index: number } | undefined;
  #message: { item: ResponseOutputMessage; index: number } | undefined;
  /** The function call items, by the engine's index of the call in its choice. */
  readonly #calls = new Map<number, { item: ResponseFunctionToolCall; index: number }>();

  /** The citations of a message's text, when its answer drew on a file search's passages. */
  readonly #cite: ((text: string) => FileCitation[]) | undefined;

  constructor(
    emit: (event: UnsequencedEvent) => void = () => {},
    { summary = false, cite }: { summary?: boolean; cite?: (text: string) => FileCitation[] } = {},
  ) {
    this.#emit = emit;
    this.#summary = summary;
    this.#cite = cite;
  }

  /**
   * The file search that ran before the answer: its item, complete, with OpenAI's events for each of its steps (it has
   * run by the time the stream begins, so they come together).
   */
  addFileSearch(queries: string[], results: FileSearchResult[] | null): void {
    const item: ResponseFileSearchToolCall = {
      id: newId('fs_'),
      type: 'file_search_call',
      status: 'in_progress',
      queries,
      results: null,
    };
    const index = this.items.push(item) - 1;
    const at = { item_id: item.id, output_index: index };
    this.#emit({ type: 'response.output_item.added', output_index: index, item: structuredClone(item) });
    this.#emit({ type: 'response.file_search_call.in_progress', ...at });
    this.#emit({ type: 'response.file_search_call.searching', ...at });
    Object.assign(item, { status: 'completed', results });
    this.#emit({ type: 'response.file_search_call.completed', ...at });
    this.#emit({ type: 'response.output_item.done', output_index: index, item: structuredClone(item) });
  }

  /** More of a reasoning model's thought: it comes before the answer, in an item of its own. */
  addReasoning(delta: string): void {
    const { item, index } = this.#openReasoning();
    item.content[0]!.text += delta;
    const at = { item_id: item.id, output_index: index };
    this.#emit({ type: 'response.reasoning_text.delta', ...at, content_index: 0, delta });
    if (!this.#summary) return;
    item.summary[0]!.text += delta;
    this.#emit({ type: 'response.reasoning_summary_text.delta', ...at, summary_index: 0, delta });
  }

  /** The text of every output_text part, joined: the response's `output_text`. */
  get text(): string {
    return this.items
      .flatMap((item) => (item.type === 'message' ? item.content.map((part) => part.text) : []))
      .join('');
  }

  /** New text of the reply, with the log probabilities of its tokens when they were asked for. */
  addText(delta: string, logprobs: GeneratedTokenLogprob[] = []): void {
    this.#closeReasoning();
    const { item, index } = this.#openMessage();
    const part = item.content[0]!;
    const added = logprobs.map(toLogprob);
    part.text += delta;
    part.logprobs.push(...added);
    this.#emit({
      type: 'response.output_text.delta',
      item_id: item.id,
      output_index: index,
      content_index: 0,
      delta,
      logprobs: added.map(toDeltaLogprob),
    });
  }

  /**
   * A function call begins: its item opens, with its name and no arguments yet. Text before it is complete: its
   * message is closed first, as OpenAI's stream closes each item before the next begins.
   */
  addCall(call: number, name: string): void {
    this.#closeReasoning();
    if (this.#message) this.#close(this.#message.item, this.#message.index, 'completed');
    const item: ResponseFunctionToolCall = {
      id: newId('fc_'),
      type: 'function_call',
      status: 'in_progress',
      arguments: '',
      call_id: newId('call_'),
      name,
    };
    const index = this.items.push(item) - 1;
    this.#calls.set(call, { item, index });
    this.#emit({ type: 'response.output_item.added', output_index: index, item: { ...item } });
  }

  /** More of a call's arguments. */
  addArguments(call: number, delta: string): void {
    const { item, index } = this.#calls.get(call)!;
    item.arguments += delta;
    this.#emit({ type: 'response.function_call_arguments.delta', item_id: item.id, output_index: index, delta });
  }

  /**
   * The generation ended: every open item is closed, `incomplete` when a token limit cut it. A reply with neither
   * text nor calls is an empty message, so that there is always an answer to read.
   */
  finish(reason: FinishReason): void {
    this.finishReason = reason;
    const status: ItemStatus = reason === 'length' ? 'incomplete' : 'completed';
    if (!this.items.some((item) => item.type !== 'reasoning')) this.#openMessage();
    this.items.forEach((item, index) => this.#close(item, index, status));
  }

  /** Closes an open item with its `…done` events. */
  #close(item: ResponseOutputItem, index: number, status: ItemStatus): void {
    if (item.status !== 'in_progress') return;
    item.status = status;
    if (item.type === 'reasoning') {
      const at = { item_id: item.id, output_index: index };
      this.#emit({ type: 'response.reasoning_text.done', ...at, content_index: 0, text: item.content[0]!.text });
      const summary = item.summary[0];
      if (summary) {
        this.#emit({ type: 'response.reasoning_summary_text.done', ...at, summary_index: 0, text: summary.text });
        this.#emit({ type: 'response.reasoning_summary_part.done', ...at, summary_index: 0, part: { ...summary } });
      }
    } else if (item.type === 'message') {
      const part = item.content[0]!;
      const location = { item_id: item.id, output_index: index, content_index: 0 };
      part.annotations = this.#cite?.(part.text) ?? [];
      part.annotations.forEach((annotation, annotationIndex) =>
        this.#emit({
          type: 'response.output_text.annotation.added',
          ...location,
          annotation_index: annotationIndex,
          annotation: { ...annotation },
        }),
      );
      this.#emit({
        type: 'response.output_text.done',
        ...location,
        text: part.text,
        logprobs: part.logprobs.map(toDeltaLogprob),
      });
      this.#emit({ type: 'response.content_part.done', ...location, part: structuredClone(part) });
    } else if (item.type === 'file_search_call') {
      // Added complete (addFileSearch): never open here.
    } else {
      this.#emit({
        type: 'response.function_call_arguments.done',
        item_id: item.id,
        output_index: index,
        name: item.name,
        arguments: item.arguments,
      });
    }
    this.#emit({ type: 'response.output_item.done', output_index: index, item: structuredClone(item) });
  }

  /** The thought is over once the answer begins (the model writes nothing after it but the answer). */
  #closeReasoning(): void {
    if (this.#reasoning) this.#close(this.#reasoning.item, this.#reasoning.index, 'completed');
  }

  #openReasoning(): { item: ResponseReasoningItem; index: number } {
    if (this.#reasoning) return this.#reasoning;
    const item: ResponseReasoningItem = {
      id: newId('rs_'),
      type: 'reasoning',
      summary: [],
      content: [{ type: 'reasoning_text', text: '' }],
      status: 'in_progress',
    };
    const index = this.items.push(item) - 1;
    this.#reasoning = { item, index };
    this.#emit({ type: 'response.output_item.added', output_index: index, item: structuredClone(item) });
    if (this.#summary) {
      const part = { type: 'summary_text' as const, text: '' };
      item.summary.push(part);
      this.#emit({
        type: 'response.reasoning_summary_part.added',
        item_id: item.id,
        output_index: index,
        summary_index: 0,
        part: { ...part },
      });
    }
    return this.#reasoning;
  }

  #openMessage(): { item: ResponseOutputMessage; index: number } {
    // Text after a call (which closed the message before it) is a message of its own.
    if (this.#message?.item.status === 'in_progress') return this.#message;
    const item: ResponseOutputMessage = {
      id: newId('msg_'),
      type: 'message',
      status: 'in_progress',
      role: 'assistant',
      content: [],
    };
    const index = this.items.push(item) - 1;
    this.#message = { item, index };
    this.#emit({ type: 'response.output_item.added', output_index: index, item: structuredClone(item) });
    const part = { type: 'output_text' as const, text: '', annotations: [], logprobs: [] };
    item.content.push(part);
    this.#emit({
      type: 'response.content_part.added',
      item_id: item.id,
      output_index: index,
      content_index: 0,
      part: structuredClone(part),
    });
    return this.#message;
  }
}
