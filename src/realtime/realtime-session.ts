/**
 * One Realtime session: the Realtime API's event protocol (GA, as openai-node types it) over Lantern's own /v1 routes.
 * Audio comes in through the input buffer and voice activity; a committed turn is transcribed by
 * `POST /v1/audio/transcriptions`, answered by a streamed `POST /v1/chat/completions`, and spoken sentence by sentence
 * by `POST /v1/audio/speech` while the text still streams. Every model call goes through `options.request`, so the
 * handler's auth, limits and routing apply. Transport-agnostic: no DOM, no socket.
 */
import { chatMessages, parseClientItem } from './client-items.ts';
import { responseParams, type ResponseParams } from './response-params.ts';
import { readChatStream } from './chat-stream.ts';
import { Conversation } from './conversation.ts';
import { InputAudioBuffer, MAX_INPUT_BUFFER_MS } from './input-audio-buffer.ts';
import {
  base64ToBytes,
  bytesToBase64,
  decodeInputAudio,
  encodeOutputAudio,
  pcm16FromBytes,
  pcm16ToWav,
  SESSION_RATE,
  samplesToMs,
} from './pcm-audio.ts';
import {
  isRecord,
  RealtimeClientError,
  realtimeId,
  type RealtimeContentPart,
  type RealtimeErrorBody,
  type RealtimeFunctionCallItem,
  type RealtimeItem,
  type RealtimeMessageItem,
  type RealtimeResponse,
  type RealtimeServerEvent,
  type ResponseStatus,
  type ServerEventBody,
} from './realtime-events.ts';
import { defaultSession, mergeSession, type RealtimeSessionConfig } from './session-config.ts';
import { SentenceCutter } from './sentence-cutter.ts';
import { vadSettings, VoiceActivity, type VadEvent } from './voice-activity.ts';

export type { RealtimeServerEvent } from './realtime-events.ts';

/**
 * Where assistant audio goes when the transport carries audio beside the events (WebRTC's outgoing track). Without a
 * speaker the session sends audio as `response.output_audio.delta` events (WebSocket).
 */
export interface RealtimeSpeaker {
  /** Queues `samples` (PCM16 mono at 24 kHz) of item `itemId`'s audio; plays at once when idle. */
  play(itemId: string, samples: Int16Array): void;
  /**
   * Stops at once and drops everything queued. Returns the item that was playing (or last played) and how many
   * milliseconds of it were heard, or undefined when nothing was played since the last clear.
   */
  clear(): { itemId: string; playedMs: number } | undefined;
  /** Milliseconds of `itemId`'s audio played so far. */
  playedMs(itemId: string): number;
  /** The session's listeners: the speaker calls `started` when sound begins after silence, `stopped` when its queue runs dry. */
  listen(listener: { started(itemId: string): void; stopped(itemId: string): void }): void;
}

/**
 * How fast one response came, for the bench and the playground (never on the wire). Wall times in milliseconds;
 * null where the response had no such step.
 */
export interface RealtimeMetrics {
  responseId: string;
  /**
   * From the end of the user's speech to the first audio out: the silence voice activity waited for (audio time) plus
   * the wall time from detecting the turn's end to the first audio chunk. Null unless voice activity started it.
   */
  speechEndToFirstAudioMs: number | null;
  /**
   * How long the response waited for the turn's transcript after the commit (less than the transcription takes when it
   * began at a pause in speech, before the turn's end).
   */
  transcriptionMs: number | null;
  /** From `response.created` to the first text delta. */
  firstTextMs: number | null;
  /** From `response.created` to the first audio chunk. */
  firstAudioMs: number | null;
}

export interface RealtimeSessionOptions {
  /**
   * Makes one request of the Lantern API as the session's key: `path` like `/v1/chat/completions`, `init` as for
   * `fetch` (method, headers except Authorization, body, signal). The transport binds the credentials.
   */
  request(path: string, init: RequestInit): Promise<Response>;
  /** Sends one server event to the client (the data channel, or the socket). */
  send(event: RealtimeServerEvent): void;
  /** WebRTC's outgoing track; absent for WebSocket (audio then travels as events). */
  speaker?: RealtimeSpeaker | undefined;
  /** The session as the client secret or the call configured it (the wire's `session` object of `session.update`), or undefined. */
  session?: unknown;
  /** The model the URL or the secret named (`gpt-realtime`, …). */
  model: string;
  /** Called once when the session ends by itself (an unrecoverable error); the transport then closes. */
  onClose?: ((reason: string) => void) | undefined;
  now?: (() => number) | undefined;
  /** Called after each `response.done` with how fast that response came. */
  onMetrics?: ((metrics: RealtimeMetrics) => void) | undefined;
}

/** The largest client event read, as JSON text: 15 MiB of base64 audio and its envelope, as OpenAI bounds it. */
export const MAX_CLIENT_EVENT_CHARS = 16 * 1024 * 1024;
/** The most recent items the chat model reads (older ones drop off, like OpenAI's `truncation: 'auto'`). */
export const CONTEXT_ITEMS = 64;
/** The shortest audio a commit takes, as OpenAI's. */
const MIN_COMMIT_MS = 100;
/** The largest `response.output_audio.delta`: half a second, so a client starts playing before a sentence is done. */
const AUDIO_DELTA_SAMPLES = SESSION_RATE / 2;
/** Tries of a model call answered 429 (see `#request`). */
const RETRIES_ON_429 = 4;
/** The speech model a session speaks with (an alias every profile's text-to-speech model answers to). */
const SPEECH_MODEL = 'tts-1';

/** The chat model a session's `model` names: realtime model names go to the `gpt-realtime` alias, others as they are. */
export function chatModelFor(model: string): string {
  return /realtime/i.test(model) ? 'gpt-realtime' : model;
}

/** The turn that voice activity ended, which an automatic response answers. */
interface Turn {
  detectedAt: number;
  silenceMs: number;
  transcriptionMs: number | null;
}

/** An assistant item's audio so far, and where each sentence's audio began (to cut the transcript at truncation). */
interface SpokenAudio {
  responseId: string;
  samples: number;
  sentences: { text: string; startSample: number }[];
}

interface ActiveResponse {
  response: RealtimeResponse;
  params: ResponseParams;
  controller: AbortController;
  cancelReason: 'client_cancelled' | 'turn_detected' | undefined;
  message: RealtimeMessageItem | undefined;
  calls: Map<number, RealtimeFunctionCallItem>;
  cutter: SentenceCutter;
  speech: Promise<void>;
  finishReason: string | null;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
  turn: Turn | undefined;
  createdAt: number;
  firstTextAt: number | undefined;
  firstAudioAt: number | undefined;
}

interface TranscriptAnswer {
  text: string;
  usage?: unknown;
}

/** A transcript asked for at a pause in speech, of the audio up to `until` (session-clock samples). */
interface Speculation {
  until: number;
  controller: AbortController;
  answer: Promise<TranscriptAnswer>;
}

class RequestFailed extends Error {
  constructor(
    message: string,
    readonly code: string | null,
  ) {
    super(message);
  }
}

/** One Realtime session: the Realtime API's event protocol over Lantern's own /v1 routes. */
export class RealtimeSession {
  readonly #options: RealtimeSessionOptions;
  readonly #now: () => number;
  #session: RealtimeSessionConfig;
  readonly #conversationId = realtimeId('conv');
  readonly #conversation = new Conversation();
  readonly #buffer = new InputAudioBuffer();
  #vad: VoiceActivity | null = null;
  /** The transcript begun at the current pause in speech, if speech has paused. */
  #speculation: Speculation | undefined;
  /** Whether a transcript asked for at a pause is still running (dropped or not). */
  #speculating = false;
  /** The item id a turn in progress will commit as (named by `speech_started`). */
  #turnItemId: string | null = null;
  #lastTurn: Turn | undefined;
  readonly #transcribing = new Map<string, Promise<void>>();
  readonly #spoken = new Map<string, SpokenAudio>();
  #active: ActiveResponse | undefined;
  /** Voice activity ended a turn while a response ran: answered when it ends. */
  #queuedTurn: Turn | undefined;
  #queued = false;
  /**
   * Where on the audio clock the last response's audio ended (its `response.done` plus its audio's length, or the
   * speaker's `stopped`): server VAD's `idle_timeout_ms` counts from there. Null while a turn or response runs.
   */
  #idleFrom: number | null = null;
  /** The item the speaker is playing, between its `started` and `stopped`. */
  #playing: string | null = null;
  readonly #closing = new AbortController();
  #closed = false;
  #opened = false;
  /** A bad configuration from the secret or the call, reported once the session opens. */
  #pendingError: unknown;

  constructor(options: RealtimeSessionOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => Date.now());
    this.#session = defaultSession(realtimeId('sess'), options.model, this.#now());
    if (options.session !== undefined && options.session !== null) {
      // The secret's or the call's configuration was checked where it was given; a bad one is reported on open.
      try {
        this.#session = mergeSession(this.#session, options.session);
      } catch (error) {
        this.#pendingError = error;
      }
    }
    this.#configureVad();
    options.speaker?.listen({
      started: (itemId) => {
        this.#playing = itemId;
        this.#emit({ type: 'output_audio_buffer.started', response_id: this.#spoken.get(itemId)?.responseId ?? null });
      },
      stopped: (itemId) => {
        if (this.#playing === itemId) this.#playing = null;
        if (!this.#active) this.#idleFrom = this.#buffer.end;
        this.#emit({ type: 'output_audio_buffer.stopped', response_id: this.#spoken.get(itemId)?.responseId ?? null });
      },
    });
  }

  /** The session as `session.updated` would echo it (for transports and tests). */
  get session(): RealtimeSessionConfig {
    return structuredClone(this.#session);
  }

  /** The conversation's items, in order. */
  get items(): readonly RealtimeItem[] {
    return structuredClone(this.#conversation.items) as RealtimeItem[];
  }

  /** Sends `session.created`; call once the transport can carry events. */
  open(): void {
    if (this.#opened || this.#closed) return;
    this.#opened = true;
    this.#emit({ type: 'session.created', session: this.session });
    if (this.#pendingError !== undefined) this.#reportError(this.#pendingError, null);
    this.#pendingError = undefined;
  }

  /** One client event, as the JSON text the client sent. Bad events are answered with `error` events, never thrown. */
  receive(text: string): void {
    if (this.#closed) return;
    let eventId: string | null = null;
    try {
      if (this.#expired()) return;
      if (text.length > MAX_CLIENT_EVENT_CHARS)
        throw new RealtimeClientError(
          `The event is ${text.length} characters long; at most ${MAX_CLIENT_EVENT_CHARS} are read.`,
          null,
          'event_too_large',
        );
      let event: unknown;
      try {
        event = JSON.parse(text);
      } catch {
        throw new RealtimeClientError('The event is not valid JSON.', null, 'invalid_json');
      }
      if (!isRecord(event)) throw new RealtimeClientError('The event must be a JSON object.', null, 'invalid_event');
      if (typeof event.event_id === 'string') eventId = event.event_id;
      if (typeof event.type !== 'string')
        throw new RealtimeClientError("Missing required parameter: 'type'.", 'type', 'missing_required_parameter');
      this.#dispatch(event as Record<string, unknown> & { type: string });
    } catch (error) {
      this.#reportError(error, eventId);
    }
  }

  /** Microphone audio from a track (WebRTC): PCM16 mono at 24 kHz, through the same input buffer and VAD as `input_audio_buffer.append`. */
  appendAudio(samples: Int16Array): void {
    if (this.#closed || this.#expired()) return;
    try {
      this.#append(samples);
    } catch (error) {
      this.#reportError(error, null);
    }
  }

  /** The transport closed: running work is aborted. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#active?.controller.abort();
    this.#closing.abort();
  }

  // ————— events in —————

  #dispatch(event: Record<string, unknown> & { type: string }): void {
    switch (event.type) {
      case 'session.update': {
        if (event.session === undefined)
          throw new RealtimeClientError(
            "Missing required parameter: 'session'.",
            'session',
            'missing_required_parameter',
          );
        const before = this.#session.audio.input.turn_detection;
        this.#session = mergeSession(this.#session, event.session);
        if (JSON.stringify(before) !== JSON.stringify(this.#session.audio.input.turn_detection)) this.#configureVad();
        this.#emit({ type: 'session.updated', session: this.session });
        return;
      }
      case 'input_audio_buffer.append': {
        if (typeof event.audio !== 'string')
          throw new RealtimeClientError("Missing required parameter: 'audio'.", 'audio', 'missing_required_parameter');
        let bytes: Uint8Array;
        try {
          bytes = base64ToBytes(event.audio);
        } catch {
          throw new RealtimeClientError("Invalid 'audio': not base64.", 'audio', 'invalid_value');
        }
        this.#append(decodeInputAudio(bytes, this.#session.audio.input.format));
        return;
      }
      case 'input_audio_buffer.commit':
        this.#commit(this.#turnItemId ?? realtimeId('item'));
        return;
      case 'input_audio_buffer.clear':
        this.#buffer.clear();
        this.#dropSpeculation();
        this.#vad?.reset(this.#buffer.end);
        this.#turnItemId = null;
        this.#emit({ type: 'input_audio_buffer.cleared' });
        return;
      case 'conversation.item.create':
        this.#createItem(event);
        return;
      case 'conversation.item.retrieve': {
        const item = this.#item(event.item_id);
        this.#emit({ type: 'conversation.item.retrieved', item: structuredClone(item) });
        return;
      }
      case 'conversation.item.delete': {
        const item = this.#item(event.item_id);
        this.#conversation.delete(item.id);
        this.#spoken.delete(item.id);
        this.#emit({ type: 'conversation.item.deleted', item_id: item.id });
        return;
      }
      case 'conversation.item.truncate':
        this.#clientTruncate(event);
        return;
      case 'response.create': {
        if (this.#active) throw this.#alreadyActive();
        this.#startResponse(responseParams(this.#session, event.response, this.#lookup), undefined);
        return;
      }
      case 'response.cancel': {
        const active = this.#active;
        if (!active || (typeof event.response_id === 'string' && event.response_id !== active.response.id))
          throw new RealtimeClientError(
            'Cancellation failed: no active response found.',
            typeof event.response_id === 'string' ? 'response_id' : null,
            'response_cancel_not_active',
          );
        this.#cancel('client_cancelled');
        return;
      }
      case 'output_audio_buffer.clear': {
        const speaker = this.#options.speaker;
        if (!speaker)
          throw new RealtimeClientError(
            'output_audio_buffer.clear is for WebRTC sessions: over a WebSocket the client holds the audio.',
            'type',
            'invalid_value',
          );
        this.#clearSpeaker(speaker, true);
        return;
      }
      default:
        throw new RealtimeClientError(
          `Invalid value: '${event.type}'. Unknown client event type.`,
          'type',
          'invalid_value',
        );
    }
  }

  #item(id: unknown): RealtimeItem {
    if (typeof id !== 'string')
      throw new RealtimeClientError("Missing required parameter: 'item_id'.", 'item_id', 'missing_required_parameter');
    const item = this.#conversation.get(id);
    if (!item) throw new RealtimeClientError(`Item with item_id '${id}' not found.`, 'item_id', 'item_not_found');
    return item;
  }

  // ————— input audio and turns —————

  #configureVad(): void {
    const turn = this.#session.audio.input.turn_detection;
    this.#dropSpeculation();
    this.#vad = turn ? new VoiceActivity(vadSettings(turn)) : null;
    this.#vad?.reset(this.#buffer.end);
    this.#turnItemId = null;
  }

  #append(samples: Int16Array): void {
    if (!this.#buffer.fits(samples.length))
      throw new RealtimeClientError(
        `The input audio buffer holds at most ${MAX_INPUT_BUFFER_MS / 60_000} minutes of audio: commit or clear it.`,
        'audio',
        'input_audio_buffer_full',
      );
    const at = this.#buffer.end;
    this.#buffer.append(samples);
    const vad = this.#vad;
    if (!vad) return;
    for (const event of vad.push(samples, at)) this.#onVoice(event, vad);
    this.#checkIdle(vad);
    // Between turns only the prefix padding (and the frames the detector has yet to decide on) is worth keeping.
    if (!vad.speaking) this.#buffer.dropBefore(this.#buffer.end - msToSamples(vad.settings.prefixPaddingMs + 100));
  }

  #onVoice(event: VadEvent, vad: VoiceActivity): void {
    if (event.type === 'pause') {
      this.#dropSpeculation();
      // One transcript ahead at a time: a dropped one may still hold one of the key's request slots.
      if (this.#speculating) return;
      const controller = new AbortController();
      const signal = AbortSignal.any([controller.signal, this.#closing.signal]);
      const answer = this.#requestTranscript(this.#buffer.peek(event.atSample), signal);
      answer.catch(() => {}); // dropped when speech resumes; its failure is the commit's to report
      this.#speculating = true;
      void answer.catch(() => {}).finally(() => (this.#speculating = false));
      this.#speculation = { until: event.atSample, controller, answer };
      return;
    }
    if (event.type === 'resume') {
      this.#dropSpeculation();
      return;
    }
    if (event.type === 'start') {
      const startMs = Math.max(
        samplesToMs(this.#buffer.end - this.#buffer.length),
        event.speechMs - vad.settings.prefixPaddingMs,
      );
      this.#buffer.dropBefore(msToSamples(startMs));
      this.#turnItemId = realtimeId('item');
      this.#idleFrom = null;
      this.#emit({
        type: 'input_audio_buffer.speech_started',
        audio_start_ms: Math.round(startMs),
        item_id: this.#turnItemId,
      });
      const turn = this.#session.audio.input.turn_detection;
      if (turn?.interrupt_response) this.#interrupt();
      return;
    }
    const itemId = this.#turnItemId ?? realtimeId('item');
    this.#emit({ type: 'input_audio_buffer.speech_stopped', audio_end_ms: event.endMs, item_id: itemId });
    const turn: Turn = { detectedAt: this.#now(), silenceMs: event.endMs - event.lastSpeechMs, transcriptionMs: null };
    this.#lastTurn = turn;
    // Nothing loud came after the pause, so its transcript is the turn's (the silence since adds no words).
    const speculation = this.#speculation;
    this.#speculation = undefined;
    this.#commit(itemId, msToSamples(event.endMs), speculation?.answer);
    if (!this.#session.audio.input.turn_detection?.create_response) return;
    if (this.#active) {
      this.#queued = true;
      this.#queuedTurn = turn;
    } else this.#startResponse(responseParams(this.#session, undefined, this.#lookup), turn);
  }

  /**
   * Server VAD's `idle_timeout_ms`: no speech for that long after the last response's audio ended commits the quiet
   * buffer as a turn and answers it (the model may prompt the user to go on), as OpenAI does.
   */
  #checkIdle(vad: VoiceActivity): void {
    const turn = this.#session.audio.input.turn_detection;
    const from = this.#idleFrom;
    if (turn?.type !== 'server_vad' || turn.idle_timeout_ms === null || from === null) return;
    if (vad.speaking || this.#active || this.#playing !== null) return;
    const end = this.#buffer.end;
    if (end - from < msToSamples(turn.idle_timeout_ms)) return;
    this.#idleFrom = null;
    const itemId = realtimeId('item');
    this.#emit({
      type: 'input_audio_buffer.timeout_triggered',
      audio_start_ms: Math.round(samplesToMs(from)),
      audio_end_ms: Math.round(samplesToMs(end)),
      item_id: itemId,
    });
    this.#commit(itemId);
    this.#startResponse(responseParams(this.#session, undefined, this.#lookup), undefined);
  }

  /** Barge-in: the user spoke over the assistant. The response stops, and so does its audio, cut to what was heard. */
  #interrupt(): void {
    const active = this.#active;
    if (active) this.#cancel('turn_detected');
    const speaker = this.#options.speaker;
    if (speaker && (this.#playing !== null || active)) this.#clearSpeaker(speaker, true);
  }

  #clearSpeaker(speaker: RealtimeSpeaker, truncate: boolean): void {
    const heard = speaker.clear();
    const responseId = heard
      ? (this.#spoken.get(heard.itemId)?.responseId ?? null)
      : (this.#active?.response.id ?? null);
    this.#playing = null;
    this.#emit({ type: 'output_audio_buffer.cleared', response_id: responseId });
    if (truncate && heard && this.#conversation.has(heard.itemId))
      this.#truncate(heard.itemId, Math.floor(heard.playedMs));
  }

  #dropSpeculation(): void {
    this.#speculation?.controller.abort();
    this.#speculation = undefined;
  }

  #commit(itemId: string, until?: number, transcript?: Promise<TranscriptAnswer>): void {
    if (!transcript) this.#dropSpeculation();
    const samples = this.#buffer.take(until);
    this.#vad?.reset(this.#buffer.end);
    this.#turnItemId = null;
    const ms = samplesToMs(samples.length);
    if (ms < MIN_COMMIT_MS)
      throw new RealtimeClientError(
        `Error committing input audio buffer: buffer too small. Expected at least ${MIN_COMMIT_MS}ms of audio, but buffer only has ${ms.toFixed(2)}ms of audio.`,
        null,
        'input_audio_buffer_commit_empty',
      );
    const item: RealtimeMessageItem = {
      id: itemId,
      object: 'realtime.item',
      type: 'message',
      role: 'user',
      status: 'completed',
      content: [{ type: 'input_audio', transcript: null }],
    };
    const previous = this.#conversation.insert(item);
    this.#emit({ type: 'input_audio_buffer.committed', previous_item_id: previous, item_id: item.id });
    this.#emit({ type: 'conversation.item.added', previous_item_id: previous, item: structuredClone(item) });
    this.#startTranscription(item, 0, transcript ?? samples, this.#lastTurn);
  }

  /**
   * Transcribes a user item's audio part into its transcript, then says so (the transcription events when the session
   * asks for them) and sends the item's `conversation.item.done`. `source` is the audio, or a transcript already asked
   * for (the one begun at a pause).
   */
  #startTranscription(
    item: RealtimeMessageItem,
    contentIndex: number,
    source: Int16Array | Promise<TranscriptAnswer>,
    turn: Turn | undefined,
  ): void {
    const answer = source instanceof Int16Array ? this.#requestTranscript(source, this.#closing.signal) : source;
    const job = this.#transcribe(item, contentIndex, answer, turn).finally(() => this.#transcribing.delete(item.id));
    this.#transcribing.set(item.id, job);
  }

  /** `POST /v1/audio/transcriptions` of `samples` as a WAV, with the session's transcription settings. */
  async #requestTranscript(samples: Int16Array, signal: AbortSignal): Promise<TranscriptAnswer> {
    const settings = this.#session.audio.input.transcription;
    const form = new FormData();
    form.append('file', new Blob([pcm16ToWav(samples) as Uint8Array<ArrayBuffer>], { type: 'audio/wav' }), 'input.wav');
    form.append('model', settings?.model ?? 'whisper-1');
    if (settings?.language) form.append('language', settings.language);
    if (settings?.prompt) form.append('prompt', settings.prompt);
    const response = await this.#request('/v1/audio/transcriptions', { method: 'POST', body: form, signal });
    const body = (await response.json().catch(() => ({}))) as {
      text?: string;
      usage?: unknown;
      error?: { message?: string; code?: string };
    };
    if (!response.ok || typeof body.text !== 'string')
      throw new RequestFailed(
        body.error?.message ?? `Transcription failed (${response.status}).`,
        body.error?.code ?? null,
      );
    return { text: body.text.trim(), usage: body.usage };
  }

  async #transcribe(
    item: RealtimeMessageItem,
    contentIndex: number,
    answer: Promise<TranscriptAnswer>,
    turn: Turn | undefined,
  ): Promise<void> {
    const part = item.content[contentIndex] as Extract<RealtimeContentPart, { type: 'input_audio' }>;
    const settings = this.#session.audio.input.transcription;
    const started = this.#now();
    try {
      const { text: transcript, usage } = await answer;
      part.transcript = transcript;
      if (turn) turn.transcriptionMs = this.#now() - started;
      if (this.#closed) return;
      if (settings) {
        if (transcript !== '')
          this.#emit({
            type: 'conversation.item.input_audio_transcription.delta',
            item_id: item.id,
            content_index: contentIndex,
            delta: transcript,
          });
        this.#emit({
          type: 'conversation.item.input_audio_transcription.completed',
          item_id: item.id,
          content_index: contentIndex,
          transcript,
          ...(usage ? { usage } : {}),
        });
      }
    } catch (error) {
      if (this.#closed) return;
      part.transcript = '';
      const message = error instanceof Error ? error.message : String(error);
      const code = error instanceof RequestFailed ? error.code : null;
      if (settings)
        this.#emit({
          type: 'conversation.item.input_audio_transcription.failed',
          item_id: item.id,
          content_index: contentIndex,
          error: { type: 'transcription_error', code, message, param: null },
        });
      else
        this.#emit({
          type: 'error',
          error: errorBody('server_error', code, `Transcribing ${item.id} failed: ${message}`, null, null),
        });
    }
    if (this.#conversation.has(item.id))
      this.#emit({
        type: 'conversation.item.done',
        previous_item_id: this.#previousOf(item.id),
        item: structuredClone(item),
      });
  }

  #previousOf(id: string): string | null {
    const items = this.#conversation.items;
    const at = items.findIndex((i) => i.id === id);
    return at > 0 ? items[at - 1]!.id : null;
  }

  // ————— conversation items —————

  #createItem(event: Record<string, unknown>): void {
    const { item, audio } = parseClientItem(event.item);
    const previousParam = event.previous_item_id;
    if (previousParam !== undefined && previousParam !== null && typeof previousParam !== 'string')
      throw new RealtimeClientError(
        "Invalid type for 'previous_item_id': expected a string.",
        'previous_item_id',
        'invalid_type',
      );
    let samples: Int16Array | undefined;
    if (audio) {
      try {
        samples = decodeInputAudio(base64ToBytes(audio.base64), this.#session.audio.input.format);
      } catch {
        throw new RealtimeClientError(
          `Invalid 'item.content[${audio.contentIndex}].audio': not base64.`,
          `item.content[${audio.contentIndex}].audio`,
        );
      }
    }
    const previous = this.#conversation.insert(item, previousParam as string | null | undefined);
    this.#emit({ type: 'conversation.item.added', previous_item_id: previous, item: structuredClone(item) });
    if (audio && samples && item.type === 'message')
      this.#startTranscription(item, audio.contentIndex, samples, undefined);
    else this.#emit({ type: 'conversation.item.done', previous_item_id: previous, item: structuredClone(item) });
  }

  #clientTruncate(event: Record<string, unknown>): void {
    const item = this.#item(event.item_id);
    if (event.content_index !== undefined && event.content_index !== 0)
      throw new RealtimeClientError("Invalid 'content_index': the item's audio is its part 0.", 'content_index');
    const end = event.audio_end_ms;
    if (typeof end !== 'number' || !Number.isInteger(end) || end < 0)
      throw new RealtimeClientError("Invalid 'audio_end_ms': expected a non-negative integer.", 'audio_end_ms');
    const spoken = this.#spoken.get(item.id);
    if (item.type !== 'message' || item.role !== 'assistant' || item.content[0]?.type !== 'output_audio' || !spoken)
      throw new RealtimeClientError('Only an assistant message with audio can be truncated.', 'item_id');
    const length = samplesToMs(spoken.samples);
    if (end > Math.ceil(length))
      throw new RealtimeClientError(
        `Audio content of ${Math.floor(length)}ms is already shorter than ${end}ms.`,
        'audio_end_ms',
      );
    const speaker = this.#options.speaker;
    if (speaker && this.#playing === item.id) this.#clearSpeaker(speaker, false);
    this.#truncate(item.id, end);
  }

  /** Cuts an assistant item's transcript to the sentences whose audio had begun by `audioEndMs`, and says so. */
  #truncate(itemId: string, audioEndMs: number): void {
    const item = this.#conversation.get(itemId);
    const spoken = this.#spoken.get(itemId);
    if (item?.type === 'message' && spoken) {
      const part = item.content[0];
      const endSample = msToSamples(audioEndMs);
      if (part?.type === 'output_audio')
        part.transcript = spoken.sentences
          .filter((s) => s.startSample < endSample)
          .map((s) => s.text)
          .join('')
          .trim();
      spoken.samples = Math.min(spoken.samples, endSample);
      spoken.sentences = spoken.sentences.filter((s) => s.startSample < endSample);
    }
    this.#emit({ type: 'conversation.item.truncated', item_id: itemId, content_index: 0, audio_end_ms: audioEndMs });
  }

  // ————— responses —————

  readonly #lookup = (id: string) => this.#conversation.get(id);

  #alreadyActive(): RealtimeClientError {
    return new RealtimeClientError(
      `Conversation already has an active response in progress: ${this.#active!.response.id}. Wait until the response is finished before creating a new one.`,
      null,
      'conversation_already_has_active_response',
    );
  }

  #startResponse(params: ResponseParams, turn: Turn | undefined): void {
    const response: RealtimeResponse = {
      id: realtimeId('resp'),
      object: 'realtime.response',
      status: 'in_progress',
      status_details: null,
      output: [],
      conversation_id: params.inConversation ? this.#conversationId : null,
      output_modalities: params.modalities,
      max_output_tokens: params.maxTokens,
      audio: { output: { format: params.format, voice: params.voice } },
      usage: null,
      metadata: params.metadata,
    };
    const active: ActiveResponse = {
      response,
      params,
      controller: new AbortController(),
      cancelReason: undefined,
      message: undefined,
      calls: new Map(),
      cutter: new SentenceCutter(),
      speech: Promise.resolve(),
      finishReason: null,
      usage: null,
      turn,
      createdAt: this.#now(),
      firstTextAt: undefined,
      firstAudioAt: undefined,
    };
    this.#active = active;
    this.#emit({ type: 'response.created', response: structuredClone(response) });
    void this.#run(active).finally(() => {
      if (this.#active === active) this.#active = undefined;
      if (this.#queued && !this.#closed && !this.#active) {
        const queuedTurn = this.#queuedTurn;
        this.#queued = false;
        this.#queuedTurn = undefined;
        this.#startResponse(responseParams(this.#session, undefined, this.#lookup), queuedTurn);
      }
    });
  }

  #cancel(reason: 'client_cancelled' | 'turn_detected'): void {
    const active = this.#active;
    if (!active || active.cancelReason) return;
    active.cancelReason = reason;
    active.controller.abort();
  }

  async #run(active: ActiveResponse): Promise<void> {
    const { signal } = active.controller;
    try {
      // The chat model reads what the user said: the turns still being transcribed are waited for.
      await Promise.race([Promise.all([...this.#transcribing.values()]), aborted(signal)]);
      signal.throwIfAborted();
      const params = active.params;
      const items = params.input ?? this.#conversation.items.slice(-CONTEXT_ITEMS);
      const body: Record<string, unknown> = {
        model: chatModelFor(this.#session.model),
        messages: chatMessages(params.instructions, items),
        stream: true,
        stream_options: { include_usage: true },
      };
      if (params.tools.length > 0 && params.toolChoice !== 'none') {
        body.tools = params.tools.map((t) => ({
          type: 'function',
          function: {
            name: t.name,
            ...(t.description === undefined ? {} : { description: t.description }),
            parameters: t.parameters ?? { type: 'object', properties: {} },
          },
        }));
        body.tool_choice =
          typeof params.toolChoice === 'object'
            ? { type: 'function', function: { name: params.toolChoice.name } }
            : params.toolChoice;
      }
      if (params.maxTokens !== 'inf') body.max_completion_tokens = params.maxTokens;
      const answer = await this.#request('/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal,
      });
      if (!answer.ok || !answer.body) throw await requestFailed(answer, 'The chat model');
      for await (const chunk of readChatStream(answer.body)) {
        signal.throwIfAborted();
        if (chunk.error)
          throw new RequestFailed(chunk.error.message ?? 'The chat stream failed.', chunk.error.code ?? null);
        if (chunk.usage) active.usage = chunk.usage;
        const choice = chunk.choices?.[0];
        if (!choice) continue;
        if (choice.finish_reason) active.finishReason = choice.finish_reason;
        const delta = choice.delta;
        if (delta?.content) this.#text(active, delta.content);
        for (const call of delta?.tool_calls ?? []) this.#toolDelta(active, call);
      }
      signal.throwIfAborted();
      if (active.message && active.params.modalities[0] === 'audio')
        for (const sentence of active.cutter.flush()) this.#speak(active, active.message, sentence);
      await active.speech;
      signal.throwIfAborted();
      const incomplete = active.finishReason === 'length';
      this.#finish(
        active,
        incomplete ? 'incomplete' : 'completed',
        incomplete ? { type: 'incomplete', reason: 'max_output_tokens' } : null,
      );
    } catch (error) {
      if (this.#closed) return;
      if (signal.aborted) {
        this.#finish(active, 'cancelled', { type: 'cancelled', reason: active.cancelReason ?? 'client_cancelled' });
        return;
      }
      const message = error instanceof Error ? error.message : String(error);
      const code = error instanceof RequestFailed ? error.code : null;
      this.#finish(active, 'failed', {
        type: 'failed',
        error: { type: 'server_error', code: code ?? 'server_error', message },
      });
    }
  }

  /** The assistant message of a response, added at its first words. */
  #message(active: ActiveResponse): RealtimeMessageItem {
    if (active.message) return active.message;
    const audio = active.params.modalities[0] === 'audio';
    const item: RealtimeMessageItem = {
      id: realtimeId('item'),
      object: 'realtime.item',
      type: 'message',
      role: 'assistant',
      status: 'in_progress',
      content: [],
    };
    active.message = item;
    this.#addOutput(active, item);
    const part: RealtimeContentPart = audio
      ? { type: 'output_audio', transcript: '' }
      : { type: 'output_text', text: '' };
    item.content.push(part);
    if (audio) this.#spoken.set(item.id, { responseId: active.response.id, samples: 0, sentences: [] });
    this.#emit({
      type: 'response.content_part.added',
      response_id: active.response.id,
      item_id: item.id,
      output_index: active.response.output.indexOf(item),
      content_index: 0,
      part: audio ? { type: 'audio', transcript: '' } : { type: 'text', text: '' },
    });
    return item;
  }

  #addOutput(active: ActiveResponse, item: RealtimeItem): void {
    const outputIndex = active.response.output.length;
    active.response.output.push(item);
    this.#emit({
      type: 'response.output_item.added',
      response_id: active.response.id,
      output_index: outputIndex,
      item: structuredClone(item),
    });
    if (active.params.inConversation) {
      const previous = this.#conversation.insert(item);
      this.#emit({ type: 'conversation.item.added', previous_item_id: previous, item: structuredClone(item) });
    }
  }

  #text(active: ActiveResponse, delta: string): void {
    const item = this.#message(active);
    const part = item.content[0]!;
    const audio = part.type === 'output_audio';
    if (part.type === 'output_audio') part.transcript = (part.transcript ?? '') + delta;
    else if (part.type === 'output_text') part.text += delta;
    active.firstTextAt ??= this.#now();
    this.#emit({
      type: audio ? 'response.output_audio_transcript.delta' : 'response.output_text.delta',
      response_id: active.response.id,
      item_id: item.id,
      output_index: active.response.output.indexOf(item),
      content_index: 0,
      delta,
    });
    if (audio) for (const sentence of active.cutter.push(delta)) this.#speak(active, item, sentence);
  }

  #toolDelta(
    active: ActiveResponse,
    call: { index: number; id?: string; function?: { name?: string; arguments?: string } },
  ): void {
    let item = active.calls.get(call.index);
    if (!item) {
      item = {
        id: realtimeId('item'),
        object: 'realtime.item',
        type: 'function_call',
        status: 'in_progress',
        call_id: call.id ?? realtimeId('call'),
        name: call.function?.name ?? '',
        arguments: '',
      };
      active.calls.set(call.index, item);
      this.#addOutput(active, item);
    } else if (call.function?.name) item.name += call.function.name;
    const delta = call.function?.arguments;
    if (!delta) return;
    item.arguments += delta;
    this.#emit({
      type: 'response.function_call_arguments.delta',
      response_id: active.response.id,
      item_id: item.id,
      output_index: active.response.output.indexOf(item),
      call_id: item.call_id,
      delta,
    });
  }

  /** Queues one sentence's speech after the sentences before it. */
  #speak(active: ActiveResponse, item: RealtimeMessageItem, sentence: string): void {
    active.speech = active.speech.then(() => this.#say(active, item, sentence));
    active.speech.catch(() => {}); // awaited at the response's end; this keeps a failure from going unhandled meanwhile
  }

  async #say(active: ActiveResponse, item: RealtimeMessageItem, sentence: string): Promise<void> {
    const { signal } = active.controller;
    signal.throwIfAborted();
    const answer = await this.#request('/v1/audio/speech', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: SPEECH_MODEL,
        input: sentence.trim(),
        voice: active.params.voice,
        response_format: 'pcm',
        speed: this.#session.audio.output.speed,
      }),
      signal,
    });
    if (!answer.ok || !answer.body) throw await requestFailed(answer, 'The speech model');
    const spoken = this.#spoken.get(item.id)!;
    spoken.sentences.push({ text: sentence, startSample: spoken.samples });
    const reader = answer.body.getReader();
    let odd: number | undefined;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        signal.throwIfAborted();
        let bytes = value;
        if (odd !== undefined) {
          bytes = new Uint8Array(value.length + 1);
          bytes[0] = odd;
          bytes.set(value, 1);
          odd = undefined;
        }
        if (bytes.length % 2 === 1) odd = bytes[bytes.length - 1];
        this.#audioOut(active, item, pcm16FromBytes(bytes));
      }
    } finally {
      await reader.cancel().catch(() => {});
    }
  }

  #audioOut(active: ActiveResponse, item: RealtimeMessageItem, samples: Int16Array): void {
    if (samples.length === 0) return;
    active.firstAudioAt ??= this.#now();
    const spoken = this.#spoken.get(item.id)!;
    spoken.samples += samples.length;
    const speaker = this.#options.speaker;
    if (speaker) {
      speaker.play(item.id, samples);
      return;
    }
    for (let at = 0; at < samples.length; at += AUDIO_DELTA_SAMPLES) {
      const chunk = samples.subarray(at, at + AUDIO_DELTA_SAMPLES);
      this.#emit({
        type: 'response.output_audio.delta',
        response_id: active.response.id,
        item_id: item.id,
        output_index: active.response.output.indexOf(item),
        content_index: 0,
        delta: bytesToBase64(encodeOutputAudio(chunk, active.params.format)),
      });
    }
  }

  #finish(
    active: ActiveResponse,
    status: Exclude<ResponseStatus, 'in_progress'>,
    details: RealtimeResponse['status_details'],
  ): void {
    const response = active.response;
    const itemStatus = status === 'completed' ? 'completed' : 'incomplete';
    response.output.forEach((item, outputIndex) => {
      const at = { response_id: response.id, item_id: item.id, output_index: outputIndex };
      if (item.type === 'message') {
        const part = item.content[0];
        if (part?.type === 'output_audio') {
          this.#emit({ type: 'response.output_audio.done', ...at, content_index: 0 });
          this.#emit({
            type: 'response.output_audio_transcript.done',
            ...at,
            content_index: 0,
            transcript: part.transcript ?? '',
          });
          this.#emit({
            type: 'response.content_part.done',
            ...at,
            content_index: 0,
            part: { type: 'audio', transcript: part.transcript ?? '' },
          });
        } else if (part?.type === 'output_text') {
          this.#emit({ type: 'response.output_text.done', ...at, content_index: 0, text: part.text });
          this.#emit({
            type: 'response.content_part.done',
            ...at,
            content_index: 0,
            part: { type: 'text', text: part.text },
          });
        }
      } else if (item.type === 'function_call') {
        this.#emit({
          type: 'response.function_call_arguments.done',
          ...at,
          call_id: item.call_id,
          name: item.name,
          arguments: item.arguments,
        });
      }
      item.status = itemStatus;
      this.#emit({
        type: 'response.output_item.done',
        response_id: response.id,
        output_index: outputIndex,
        item: structuredClone(item),
      });
      if (active.params.inConversation && this.#conversation.has(item.id))
        this.#emit({
          type: 'conversation.item.done',
          previous_item_id: this.#previousOf(item.id),
          item: structuredClone(item),
        });
    });
    response.status = status;
    response.status_details = details;
    const usage = active.usage;
    response.usage = {
      total_tokens: usage?.total_tokens ?? 0,
      input_tokens: usage?.prompt_tokens ?? 0,
      output_tokens: usage?.completion_tokens ?? 0,
      input_token_details: { text_tokens: usage?.prompt_tokens ?? 0, audio_tokens: 0, cached_tokens: 0 },
      output_token_details: { text_tokens: usage?.completion_tokens ?? 0, audio_tokens: 0 },
    };
    // The next response may start as soon as the client hears this one is done.
    if (this.#active === active) this.#active = undefined;
    const spoken = active.message ? this.#spoken.get(active.message.id) : undefined;
    if (!this.#options.speaker) this.#idleFrom = this.#buffer.end + (spoken?.samples ?? 0);
    else if (!spoken || spoken.samples === 0 || this.#playing === null) this.#idleFrom = this.#buffer.end;
    else this.#idleFrom = null; // from the speaker's `stopped`
    this.#emit({ type: 'response.done', response: structuredClone(response) });
    const turn = active.turn;
    this.#options.onMetrics?.({
      responseId: response.id,
      speechEndToFirstAudioMs:
        turn && active.firstAudioAt !== undefined ? turn.silenceMs + (active.firstAudioAt - turn.detectedAt) : null,
      transcriptionMs: turn?.transcriptionMs ?? null,
      firstTextMs: active.firstTextAt === undefined ? null : active.firstTextAt - active.createdAt,
      firstAudioMs: active.firstAudioAt === undefined ? null : active.firstAudioAt - active.createdAt,
    });
  }

  /**
   * One model call through the transport's `request`. A 429 (the key's or the engine's limit: a session's calls are
   * its key's) is tried again after the `retry-after-ms` it names, a few times, as the openai SDK would; a body sent
   * again must be one that can be (a string or FormData, as these are).
   */
  async #request(path: string, init: RequestInit): Promise<Response> {
    for (let attempt = 1; ; attempt++) {
      const response = await this.#options.request(path, init);
      if (response.status !== 429 || attempt >= RETRIES_ON_429) return response;
      const wait = Number(response.headers.get('retry-after-ms') ?? '500');
      await response.body?.cancel().catch(() => {});
      await new Promise((resolve) => setTimeout(resolve, Math.min(Number.isFinite(wait) ? wait : 500, 2000)));
      init.signal?.throwIfAborted();
    }
  }

  // ————— events out —————

  #emit(body: ServerEventBody): void {
    if (this.#closed) return;
    this.#options.send({ ...body, event_id: realtimeId('event') });
  }

  #reportError(error: unknown, eventId: string | null): void {
    if (error instanceof RealtimeClientError)
      this.#emit({ type: 'error', error: errorBody(error.errorType, error.code, error.message, error.param, eventId) });
    else
      this.#emit({
        type: 'error',
        error: errorBody(
          'server_error',
          null,
          `The session failed on this event: ${error instanceof Error ? error.message : String(error)}`,
          null,
          eventId,
        ),
      });
  }

  /** A session past its `expires_at` answers once with `session_expired` and asks its transport to close. */
  #expired(): boolean {
    if (this.#now() < this.#session.expires_at * 1000) return false;
    this.#emit({
      type: 'error',
      error: errorBody(
        'invalid_request_error',
        'session_expired',
        'Your session hit the maximum duration of 60 minutes.',
        null,
        null,
      ),
    });
    this.close();
    this.#options.onClose?.('session_expired');
    return true;
  }
}

function errorBody(
  type: RealtimeErrorBody['type'],
  code: string | null,
  message: string,
  param: string | null,
  eventId: string | null,
): RealtimeErrorBody {
  return { type, code, message, param, event_id: eventId };
}

const msToSamples = (ms: number) => Math.round((ms * SESSION_RATE) / 1000);

/** Resolves never; rejects when `signal` aborts (to race a wait against a cancel). */
function aborted(signal: AbortSignal): Promise<never> {
  const wait = new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
  wait.catch(() => {}); // an abort after the race was decided is nobody's error
  return wait;
}

async function requestFailed(answer: Response, who: string): Promise<RequestFailed> {
  const body = (await answer.json().catch(() => ({}))) as { error?: { message?: string; code?: string | null } };
  return new RequestFailed(
    `${who} answered ${answer.status}: ${body.error?.message ?? answer.statusText}`,
    body.error?.code ?? null,
  );
}
