import type { Engine } from '../engine-interface/index.ts';
import type { KeyStore } from '../keys/index.ts';
import type { ResponseStore } from '../response-store/index.ts';
import type { ChatCompletionStore } from './chat-completions/stored.ts';
import type { ConversationStore } from './conversations/conversations.ts';
import type { DocumentStorage } from '../document-store/index.ts';
import type { IndexingProgress, LibraryLimits, TextExtractor } from '../file-search/index.ts';
import type { BatchLimits } from '../batches/index.ts';
import type { RecordStore } from '../record-store/index.ts';
import type { SecretRecord } from './realtime/realtime-secrets.ts';

/**
 * Every explicit limit of the API. A request over any of them is answered 400 before any work is queued, with the
 * parameter named in `error.param`.
 */
export interface Limits {
  /** Largest request body, in bytes: 32 MiB holds an image of `maxImageBytes` as a data URL (a third larger). */
  maxBodyBytes: number;
  /**
   * How long a request's body may take to arrive, in milliseconds, from the moment its key admits it: the largest body
   * (32 MiB) arrives within a minute at 5 Mbit/s, and a page's own requests arrive at once. Until it has arrived the
   * request holds a slot of its own key only, never one of the engine's.
   */
  bodyTimeoutMs: number;
  /** Most messages in one chat request. */
  maxMessages: number;
  /** Highest `max_tokens` / `max_completion_tokens`: a bound on how long one request can hold the device. */
  maxTokens: number;
  /** Highest `n`. Every choice costs a full generation's memory for its KV cache. */
  maxChoices: number;
  /** Most stop sequences; 4, as in the OpenAI API. */
  maxStopSequences: number;
  /** Most inputs in one embeddings request; 2,048, as in the OpenAI API. */
  maxInputs: number;
  /** Longest single embeddings input, in characters; the model's own token limit applies as well. */
  maxInputChars: number;
  /** Most entries in `logit_bias`. Real use biases a few words' tokens: tens, at most a few hundred. */
  maxLogitBias: number;
  /**
   * The JSON text of a request's schemas together (the response format and every function's parameters), in
   * characters. See `schema-budget.ts` for why schemas are bounded at all: each is compiled before the first token.
   */
  maxSchemaBytes: number;
  /** Deepest nesting of one schema, counted in JSON objects and arrays (a nested object schema is two: itself and `properties`). */
  maxSchemaDepth: number;
  /** Most properties of one object in a schema. */
  maxSchemaProperties: number;
  /** Characters of `enum` values and `const`s across a request's schemas. */
  maxSchemaLiteralChars: number;
  /** Longest single `enum` value, in characters: the grammar's compile grows with the square of it. */
  maxEnumValueChars: number;
  /** Largest audio file of a transcription or translation, in bytes: 25 MB, as the OpenAI API. */
  maxAudioBytes: number;
  /**
   * Longest audio of a transcription or translation, in seconds, measured from the file's headers and frames before any
   * of it is decoded (`measureAudio`): its samples are held in memory (64 KB a second at Whisper's 16 kHz), and a long
   * one holds the device for minutes.
   */
  maxAudioSeconds: number;
  /**
   * Longest text to speak (`/v1/audio/speech`'s `input`, and its `instructions`), in characters: 4,096, as the OpenAI
   * API. About five minutes of speech, synthesised and encoded a sentence at a time.
   */
  maxSpeechChars: number;
  /** Most images in one request (chat `image_url`, Responses `input_image` parts), all messages together. */
  maxImages: number;
  /** Largest image, in bytes: of a data URL's image here, of a fetched one as it downloads. 20 MB, as the OpenAI API. */
  maxImageBytes: number;
  /**
   * Most pixels in one image once decoded (width × height): its pixels are held in memory (4 bytes each) before the
   * model's processor shrinks them. 8K (7680 × 4320) by default.
   */
  maxImagePixels: number;
  /**
   * Most pixels of a request's images together, each read from its headers before any is decoded. They are decoded one
   * at a time, so this bounds the time a request spends decoding (sharp takes 0.1–0.6 s for an 8K image on two cores),
   * not memory. 132.7 megapixels: `maxImages` (16) images of 4K UHD (3840 × 2160), or four of 8K.
   */
  maxTotalImagePixels: number;
  /** How long fetching an http(s) image may take, in milliseconds, before it is refused. */
  imageFetchTimeoutMs: number;
  /**
   * The hosts whose http(s) image URLs may be fetched: exact names (`images.example.com`), no wildcards. Absent: in a
   * browser, any URL the page's own fetch may reach; in Node, none (a 400 asks for a data URL), since a URL a key holder
   * names would otherwise be fetched from the server's own network. In Node an allowed host is still refused when it
   * resolves to a loopback, private, link-local or other non-public address (docs/security.md).
   */
  imageUrlHosts?: readonly string[];
}

export const DEFAULT_LIMITS: Readonly<Limits> = Object.freeze({
  maxBodyBytes: 32 * 1024 * 1024,
  bodyTimeoutMs: 60_000,
  maxMessages: 256,
  maxTokens: 4096,
  maxChoices: 8,
  maxStopSequences: 4,
  maxInputs: 2048,
  maxInputChars: 32_768,
  maxLogitBias: 1024,
  maxSchemaBytes: 128 * 1024,
  maxSchemaDepth: 64,
  maxSchemaProperties: 1000,
  maxSchemaLiteralChars: 16_384,
  maxEnumValueChars: 256,
  maxAudioBytes: 25 * 1024 * 1024,
  maxAudioSeconds: 3600,
  maxSpeechChars: 4096,
  maxImages: 16,
  maxImageBytes: 20 * 1024 * 1024,
  maxImagePixels: 7680 * 4320,
  maxTotalImagePixels: 16 * 3840 * 2160,
  imageFetchTimeoutMs: 15_000,
});

/** The per-key rate limit of the requests that run models: chat completions and embeddings, counted together. */
export interface RateLimits {
  /** Requests a key may start per minute, refilled continuously (a token bucket of this size). */
  requestsPerMinute: number;
  /** Generations and embeddings requests a key may have running or queued at once. */
  concurrentGenerations: number;
  /**
   * Requests running or queued on the device across all keys: the bound of the engine's queue. More are refused
   * with 429 (`engine_busy`) rather than left to wait behind a line that can only grow.
   */
  maxGenerations: number;
}

/**
 * Defaults sized for one person's apps on one device: a chat UI sends a few requests a minute, an agent loop perhaps
 * one a second; more than 4 generations at once only queue behind each other on a single device, and 16 in line from
 * all apps together is already minutes of work for a small model.
 */
export const DEFAULT_RATE_LIMITS: Readonly<RateLimits> = Object.freeze({
  requestsPerMinute: 120,
  concurrentGenerations: 4,
  maxGenerations: 16,
});

/** Which browser apps of other origins may call the handler (CORS). */
export interface CorsOptions {
  /** Exact origins (`https://app.example`), or a test of the request's `Origin` header. */
  origins: readonly string[] | ((origin: string) => boolean);
}

/**
 * `http://` or `https://` `localhost`, `127.0.0.1` or `[::1]`, on any port: the dev servers of local development (a
 * Vite app on :5173 calling `npm run serve:node` on :8787). What `npm run serve:node` allows unless told otherwise.
 */
export const isLocalOrigin = (origin: string): boolean =>
  /^https?:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d{1,5})?$/.test(origin);

export interface HandlerOptions {
  /** What runs the models. */
  engine: Engine;
  /** Where API keys are checked. */
  keys: KeyStore;
  /**
   * Where the Responses API keeps responses (`store: true`, its default): `memoryResponseStore()` unless given; the
   * service worker gives `indexedDbResponseStore()`.
   */
  responses?: ResponseStore;
  /**
   * Where the Conversations API keeps conversations (one record each, its items in it): `memoryRecordStore()` unless
   * given; the service worker gives `indexedDbRecordStore('conversations')`.
   */
  conversations?: ConversationStore;
  /**
   * Where chat completions with `store: true` are kept: `memoryRecordStore()` unless given; the service worker gives
   * `indexedDbRecordStore('chat_completions')`.
   */
  chatCompletions?: ChatCompletionStore;
  /**
   * Where the Files and Vector Stores APIs keep files, chunks and indexes: `memoryDocumentStorage()` unless given; the
   * service worker gives `indexedDbDocumentStorage()`, `npm run serve:node` a directory (`directoryDocumentStorage`).
   */
  documents?: DocumentStorage;
  /** The Files and Vector Stores APIs' own options. */
  files?: {
    /** Overrides of `DEFAULT_LIBRARY_LIMITS`, per key. */
    limits?: Partial<LibraryLimits>;
    /** The model that embeds chunks of new vector stores (default: the first embeddings model). */
    embeddingModel?: string;
    /** Told as each run of a file's chunks is embedded: a page can show how far indexing has got. */
    onProgress?: (progress: IndexingProgress) => void;
    /**
     * How a file's text is read (default: `extractText` on the serving thread). `npm run serve:node` reads in a worker
     * thread with a time and memory budget (scripts/text-extraction.ts).
     */
    extract?: TextExtractor;
  };
  /**
   * Told of work that outlasts the request that started it, as it starts: a file's indexing, a background response's
   * run (`background: true`). A service worker keeps itself alive until each has ended (sw/mount-lantern.ts); in Node
   * nothing needs to.
   */
  keepAlive?: (work: Promise<void>) => void;
  /** The Batch API's own options. Its batches are kept in `documents`, beside their files. */
  batches?: {
    /** Overrides of `DEFAULT_BATCH_LIMITS`, per key. */
    limits?: Partial<BatchLimits>;
    /**
     * Lines of one key's batches running at once (default: the key's `concurrentGenerations` less one, at least 1, so
     * that a running batch leaves the key a slot of its own requests).
     */
    concurrency?: number;
  };
  /** Overrides of {@link DEFAULT_LIMITS}. */
  limits?: Partial<Limits>;
  /** Overrides of {@link DEFAULT_RATE_LIMITS}. */
  rateLimits?: Partial<RateLimits>;
  /** The clock, in milliseconds since the epoch (default `Date.now`): timestamps and rate limits use it. */
  now?: () => number;
  /** `owned_by` of every model (default `"lantern"`). */
  ownedBy?: string;
  /**
   * Told of every 500 with the request id the client also sees (default: `console.error`). Client errors (4xx) are
   * the client's business and are not reported.
   */
  onServerError?: (error: unknown, requestId: string) => void;
  /**
   * Lets browser apps of other origins call the handler: a server in Node (`npm run serve:node`) that a page of
   * another origin calls. Preflights (`OPTIONS`) are answered without a key, and every answer, errors and streams
   * included, carries the CORS headers an allowed origin needs (the retry and rate-limit headers exposed to the SDK).
   * Absent, no CORS headers are sent: in a service worker, /v1 is the page's own origin.
   */
  cors?: CorsOptions;
  /**
   * Answers the Realtime API's WebRTC calls (`POST /v1/realtime/calls`): the service worker's, which asks the calling
   * page to answer with a peer of its own (src/realtime-webrtc/). Absent (Node), a call is a 400 that points at the
   * WebSocket form (`/v1/realtime`, src/node/).
   */
  realtime?: RealtimeCallAnswerer;
  /**
   * Where the Realtime API's client secrets and call credentials are kept (hashed): `memoryRecordStore()` unless given;
   * the service worker gives `indexedDbRecordStore('realtime_secrets')`, so that a call outlives a stopped worker.
   */
  realtimeSecrets?: RecordStore<SecretRecord>;
}

/** A WebRTC call to answer: the client's offer, and what the answering session runs as. */
export interface RealtimeCall {
  /** `rtc_…`: the call's id, as `Location` names it. */
  id: string;
  /** The client's SDP offer. */
  offer: string;
  /** The model the session names (`gpt-realtime` unless the configuration names another). */
  model: string;
  /** The session configuration, as the wire's `session` object (the client secret's, or the form's), if any. */
  session: unknown;
  /** What the answering session sends as `Authorization: Bearer …` on its requests, while the call lives. */
  credential: string;
  /** When the call ends at the latest, in milliseconds since the epoch. */
  expiresAt: number;
}

export interface RealtimeCallAnswerer {
  /** The answer's SDP, from a peer that now runs the call's session; `request` is the call's (its page answers). */
  answer(call: RealtimeCall, request: Request): Promise<string>;
  /** Ends call `id`'s peer, wherever it runs. */
  hangup?(id: string): Promise<void> | void;
}
