import type { RealtimeServerEvent } from 'openai/resources/realtime/realtime';

/** One line of the voice tab's log. */
export type VoiceEntry =
  /** What the user said (its transcript once the server sends it) or typed. */
  | { kind: 'user'; itemId: string; text: string; done: boolean; typed?: boolean }
  /** What the assistant says, as its transcript streams; `interrupted` once cancelled or cut off. */
  | { kind: 'assistant'; itemId: string; text: string; done: boolean; interrupted?: boolean }
  /** A function call, its arguments, and what the page answered. */
  | { kind: 'tool'; callId: string; name: string; arguments: string; result?: string }
  /** One spoken turn: from the end of the user's speech to the assistant's first audio. */
  | { kind: 'latency'; turn: number; ms: number }
  /** An `error` event (or a failed response) as the server put it, or the page's own failure. */
  | { kind: 'error'; message: string }
  /** A note on the call: connected, interrupted, ended. */
  | { kind: 'note'; text: string };

/**
 * The voice tab's log of a call, built from the server's events as they come: transcripts (streamed), tool calls,
 * errors, and each spoken turn's latency: `input_audio_buffer.speech_stopped` to `output_audio_buffer.started`, as the
 * page receives them (what a person hears as the wait, less the network, which here is none).
 */
export class VoiceLog {
  entries: VoiceEntry[] = [];
  #speechStoppedAt: number | undefined;
  #turns = 0;

  /** Applies one server event at time `now` (ms); returns whether the log changed. */
  apply(event: RealtimeServerEvent, now: number): boolean {
    switch (event.type) {
      case 'input_audio_buffer.speech_started':
        this.#speechStoppedAt = undefined;
        return this.#upsert('user', event.item_id, () => ({ text: '', done: false }));
      case 'input_audio_buffer.speech_stopped':
        this.#speechStoppedAt = now;
        return false;
      case 'conversation.item.input_audio_transcription.delta':
        return this.#upsert('user', event.item_id, (entry) => ({ text: (entry?.text ?? '') + (event.delta ?? '') }));
      case 'conversation.item.input_audio_transcription.completed':
        return this.#upsert('user', event.item_id, () => ({ text: event.transcript, done: true }));
      case 'conversation.item.input_audio_transcription.failed':
        return this.#upsert('user', event.item_id, () => ({
          text: `(not transcribed: ${event.error.message ?? 'the transcription failed'})`,
          done: true,
        }));
      case 'response.output_audio_transcript.delta':
      case 'response.output_text.delta':
        return this.#upsert('assistant', event.item_id, (entry) => ({ text: (entry?.text ?? '') + event.delta }));
      case 'response.output_audio_transcript.done':
        return this.#upsert('assistant', event.item_id, () => ({ text: event.transcript, done: true }));
      case 'response.output_text.done':
        return this.#upsert('assistant', event.item_id, () => ({ text: event.text, done: true }));
      case 'response.function_call_arguments.done':
        return this.noteToolCall(event.call_id, event.name, event.arguments);
      case 'output_audio_buffer.started': {
        if (this.#speechStoppedAt === undefined) return false;
        const ms = Math.max(0, Math.round(now - this.#speechStoppedAt));
        this.#speechStoppedAt = undefined;
        this.entries = [...this.entries, { kind: 'latency', turn: ++this.#turns, ms }];
        return true;
      }
      case 'output_audio_buffer.cleared':
        return this.#interrupt('Assistant interrupted.');
      case 'response.done': {
        const { response } = event;
        for (const item of response.output ?? []) {
          if (item.type === 'function_call' && item.call_id) {
            this.noteToolCall(item.call_id, item.name ?? '', item.arguments ?? '');
          }
        }
        if (response.status === 'cancelled') return this.#interrupt('Reply cancelled.') || true;
        if (response.status === 'failed') {
          const error = response.status_details?.error;
          this.entries = [
            ...this.entries,
            { kind: 'error', message: `The reply failed: ${error?.code ?? error?.type ?? 'no reason given'}` },
          ];
        }
        return true;
      }
      case 'error':
        // Interrupt pressed as the reply ended: the page's cancel crossed the server's `response.done`. Nothing failed.
        if (event.error.code === 'response_cancel_not_active') {
          this.note('The reply had already ended.');
          return true;
        }
        this.entries = [...this.entries, { kind: 'error', message: event.error.message }];
        return true;
      default:
        return false;
    }
  }

  /** A call the model made (once per `call_id`: the arguments' done event and `response.done` both name it). */
  noteToolCall(callId: string, name: string, args: string): boolean {
    if (this.entries.some((e) => e.kind === 'tool' && e.callId === callId)) return false;
    this.entries = [...this.entries, { kind: 'tool', callId, name, arguments: args }];
    return true;
  }

  /** What the page answered to call `callId`. */
  noteToolResult(callId: string, result: string): void {
    this.entries = this.entries.map((e) => (e.kind === 'tool' && e.callId === callId ? { ...e, result } : e));
  }

  /** A message the user typed (the server echoes no transcript of it). */
  noteTyped(text: string): void {
    this.entries = [
      ...this.entries,
      { kind: 'user', itemId: `typed-${this.entries.length}`, text, done: true, typed: true },
    ];
  }

  note(text: string): void {
    this.entries = [...this.entries, { kind: 'note', text }];
  }

  error(message: string): void {
    this.entries = [...this.entries, { kind: 'error', message }];
  }

  /** The latency of every spoken turn so far, in ms. */
  get latencies(): number[] {
    return this.entries.flatMap((e) => (e.kind === 'latency' ? [e.ms] : []));
  }

  /** Marks the assistant's reply in progress (if any) as cut off, and notes it once. */
  #interrupt(text: string): boolean {
    const last = this.entries.findLastIndex((e) => e.kind === 'assistant');
    const entry = this.entries[last];
    if (entry?.kind === 'assistant' && entry.interrupted) return false;
    if (entry?.kind === 'assistant') {
      this.entries = this.entries.map((e, i) => (i === last ? { ...entry, interrupted: true, done: true } : e));
    }
    this.note(text);
    return true;
  }

  /** Creates the `kind` entry of item `itemId`, or updates it with `change(entry)`. */
  #upsert(
    kind: 'user' | 'assistant',
    itemId: string,
    change: (entry: { text: string; done: boolean } | undefined) => Partial<{ text: string; done: boolean }>,
  ): boolean {
    const index = this.entries.findIndex((e) => e.kind === kind && e.itemId === itemId);
    const entry = this.entries[index] as Extract<VoiceEntry, { kind: 'user' | 'assistant' }> | undefined;
    const next = { kind, itemId, text: '', done: false, ...entry, ...change(entry) } as VoiceEntry;
    this.entries = index < 0 ? [...this.entries, next] : this.entries.map((e, i) => (i === index ? next : e));
    return true;
  }
}
