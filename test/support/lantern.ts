import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import OpenAI, { type ClientOptions } from 'openai';
import {
  bundledProfile,
  createEngine,
  createHandler,
  KeyRing,
  type ChatEvent,
  type ChatRequest,
  type Engine,
  type Handler,
  type HandlerOptions,
  type ModelProfile,
} from '../../src/index.ts';
import type { EngineName } from '../../src/engines/engine-registry.ts';
import { defaultCpuThreads } from '../../src/engines/cpu-threads.ts';
import { overrideTask } from './task-override.ts';

/**
 * The options a test gives transformers.js when it calls it directly, beside Lantern: fp32 weights (the fixtures'),
 * and the onnxruntime threads Lantern's own sessions take in Node (its default would spin every core's thread against
 * the other test fork's).
 */
export const DIRECT = { dtype: 'fp32', session_options: { intraOpNumThreads: defaultCpuThreads() } } as const;

/** The bundled fixture models (public/models). */
export const BUNDLED_MODELS = fileURLToPath(new URL('../../public/models', import.meta.url));

/**
 * The engines the shared tests run the bundled models on: every engine's candidates in their chains' order (the
 * default), or only those of the engines `LANTERN_TEST_ENGINES` names (the `llama.cpp` test project: the same tests on
 * the GGUF copies of the fixtures).
 */
export const TEST_ENGINES = process.env.LANTERN_TEST_ENGINES?.split(',') as EngineName[] | undefined;

/** The bundled profile the shared tests run on (see {@link TEST_ENGINES}). */
export const testProfile = (): ModelProfile =>
  bundledProfile(BUNDLED_MODELS, TEST_ENGINES ? { engines: TEST_ENGINES } : {});

/** The shared real tiny LLaMA, when this machine has it (../shared/models); tests using it skip without it. */
export const STORIES_260K = fileURLToPath(new URL('../../../shared/models/stories260K', import.meta.url));
export const HAS_STORIES_260K = existsSync(`${STORIES_260K}/onnx/model.onnx`);
if (!HAS_STORIES_260K) console.warn(`[lantern tests] ${STORIES_260K} not found: tests on stories260K are skipped.`);

/** A reference.json written by scripts/fixtures/generate.py. */
export function reference<T>(model: 'tiny-chat' | 'tiny-embed' | 'tiny-think'): T {
  return JSON.parse(readFileSync(`${BUNDLED_MODELS}/${model}/reference.json`, 'utf8')) as T;
}

export interface ChatReference {
  messages: { role: 'system' | 'user' | 'assistant'; content: string }[];
  input_ids: number[];
  greedy_ids: number[];
  greedy_text: string;
  ends_with_eos: boolean;
}

export interface EmbedReference {
  text: string;
  input_ids: number[];
  embedding: number[];
}

/**
 * The official openai client, pointed at the handler through its `fetch` option: requests and answers cross the same
 * Request/Response wire as over HTTP. `statuses` records each answer's status, retries included.
 */
export function openaiClient(handler: Handler, apiKey: string, options: Partial<ClientOptions> = {}) {
  const statuses: number[] = [];
  const client = new OpenAI({
    apiKey,
    baseURL: 'http://lantern.test/v1',
    fetch: async (url, init) => {
      const response = await handler(new Request(url, init));
      statuses.push(response.status);
      return response;
    },
    ...options,
  });
  return Object.assign(client, { statuses });
}

/** One chat call the handler made to the engine, as {@link sdkClient} records it. */
export interface ChatCall {
  /** The public model ID it named. */
  model: string;
  /** The engine request the handler made of the client's. */
  request: ChatRequest;
  /** The events the engine emitted, counted where the handler listens (streamed requests); otherwise 0. */
  events: number;
  /** Of those, the ones emitted once the call's signal had aborted (the client went away). */
  eventsAfterAbort: number;
  /** How it ended: `'completed'`, or the error it rejected with (this promise itself never rejects). */
  outcome: Promise<unknown>;
}

export interface SdkClientOptions {
  /** What the handler runs (default: a real engine over `profile`). */
  engine?: Engine;
  /** The default engine's models (default: the bundled ones); unused with `engine`. */
  profile?: ModelProfile;
  /** The handler's other options: limits, rate limits, a clock, `onServerError`… */
  handler?: Omit<Partial<HandlerOptions>, 'engine' | 'keys'>;
  /** The openai client's options (`maxRetries`…). */
  client?: Partial<ClientOptions>;
}

/** What {@link sdkClient} gives a test. */
export interface SdkClient {
  /** The official openai client on `handler`, with `key` (see {@link openaiClient}). */
  client: ReturnType<typeof openaiClient>;
  handler: Handler;
  /** The one key issued, which `client` sends. */
  key: string;
  /** The handler's key ring: issue or revoke more keys on it. */
  keys: KeyRing;
  /** The engine behind the handler, as given or made (unrecorded). */
  engine: Engine;
  /** Every chat call the handler made to the engine, in order. */
  calls: ChatCall[];
}

/**
 * The openai SDK on a fresh handler: what a test needs to call Lantern as an app does. The handler gets its own key
 * ring and one key, and runs `engine` (by default a real engine on the bundled models), recording each chat call it
 * makes in `calls`, in order. `engine` is handed back as it is: calls made on it directly are not recorded.
 *
 * @example
 * const { client, calls } = await sdkClient({ handler: { onServerError: () => {} }, client: { maxRetries: 0 } });
 * const messages = [{ role: 'user' as const, content: 'Hi' }];
 * await client.chat.completions.create({ model: 'crimson-falcon-4', messages, max_tokens: 5 });
 * expect(calls.at(-1)!.request.maxTokens).toBe(5);
 * await expect(calls.at(-1)!.outcome).resolves.toBe('completed');
 * @see openaiClient, for another client of the same handler (another key, other options).
 */
export async function sdkClient(options: SdkClientOptions = {}): Promise<SdkClient> {
  const engine = options.engine ?? createEngine({ profile: options.profile ?? testProfile() });
  const calls: ChatCall[] = [];
  const keys = new KeyRing();
  const { key } = await keys.issue('test');
  const handler = createHandler({ engine: recording(engine, calls), keys, ...options.handler });
  const client = openaiClient(handler, key, options.client);
  return { client, handler, key, keys, engine, calls };
}

/** `engine`, with each chat call pushed onto `calls` as it starts. */
function recording(engine: Engine, calls: ChatCall[]): Engine {
  return overrideTask(engine, 'chat', (model, request, options = {}) => {
    const call: ChatCall = { model, request, events: 0, eventsAfterAbort: 0, outcome: Promise.resolve() };
    calls.push(call);
    const { onEvent, signal } = options;
    // Given no `onEvent`, the engine is given none either: a remote candidate streams only for a caller that listens.
    const counted = onEvent && {
      ...options,
      onEvent: (event: ChatEvent) => {
        call.events += 1;
        if (signal?.aborted) call.eventsAfterAbort += 1;
        onEvent(event);
      },
    };
    const result = engine.chat(model, request, counted || options);
    call.outcome = result.then(
      () => 'completed',
      (error: unknown) => error,
    );
    return result;
  });
}
