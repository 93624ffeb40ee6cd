/**
 * The benchmark page: Lantern started with tracing (each token's generation time), and beside it the same engine in a
 * worker of its own, called directly. `npm run bench` drives `window.bench` with Playwright; every figure it reports is
 * the whole /v1 path against that direct call, measured in the same page, same model, same device.
 */
import * as Comlink from 'comlink';
import OpenAI from 'openai';
import type { SpeechFormat } from '../../src/audio/index.ts';
import { startLocalAPI, type DevicePreference, type RunReport } from '../../src/client/index.ts';
import { indexedDbDocumentStorage } from '../../src/document-store/index.ts';
import { sdkBatchingRunner } from '../batching.ts';
import { benchProfile, CHAT, EMBED } from '../models.ts';
import {
  endlessEngineRequest,
  endlessStream,
  imageChatRequest,
  imageMessages,
  streamedFirstToken,
} from '../requests.ts';
import type { DirectWorker } from './direct-worker.ts';
import { chunkRecords, indexFiles, searchStore, type BenchChunking, type BenchFile } from './file-search-measures.ts';
import { readSpeech } from './speech-measures.ts';

const params = new URLSearchParams(location.search);
const device = (params.get('device') as DevicePreference | null) ?? 'auto';
/** `?smoke=1`: the bench's smoke pass, which warms each model up with one short run instead of three long ones. */
const WARM_UP = params.get('smoke') ? { runs: 1, tokens: 4 } : { runs: 3, tokens: 64 };
/**
 * `?stories=URL`: the real stories260K model, served from outside the project, beside the bundled ones;
 * `?realistic=URL`: the realistic model (bench/realistic-model.ts).
 */
const profile = benchProfile('/models', params.get('stories'), params.get('realistic'));
const lantern = await startLocalAPI({ profile, device, trace: true });
const direct = Comlink.wrap<DirectWorker>(
  new Worker(new URL('./direct-worker.ts', import.meta.url), { type: 'module' }),
);
await direct.start({ profile, device });

const runs: RunReport[] = [];
lantern.addEventListener('run', (event) => runs.push(event.detail));
/**
 * Thirty-two keys, taken in turn by every request: simultaneous streams (eight at most, or four and a fifth request
 * sent while they decode) stay well within the per-key limit of 4 at once, and the whole run's requests (several
 * hundred one-by-one embeddings, and the concurrency rounds, which batching makes quicker) within each key's 120 a
 * minute, which embeddings are counted against too.
 */
const keys: string[] = [];
for (let i = 0; i < 32; i++) keys.push((await lantern.keys.issue(`bench ${i}`)).key);

const warm = new Set<string>();
/** The origin's document storage, opened on first use (bench/file-search.ts), once the service worker has made it. */
let documents: ReturnType<typeof indexedDbDocumentStorage> | undefined;
/** The speech clips `bench.audio` was given, by name. */
const clips = new Map<string, Uint8Array<ArrayBuffer>>();
const now = () => performance.timeOrigin + performance.now();
let sent = 0;
/**
 * A client on the next key in turn: a fast model's short requests (time to first token) come faster than one key's
 * 120 a minute, and a 429 would end the run.
 */
const client = (key = keys[sent++ % keys.length]!) =>
  new OpenAI({ baseURL: lantern.baseURL, apiKey: key, dangerouslyAllowBrowser: true, maxRetries: 0 });

/** The next run report, once the run that is going on has finished. */
async function nextReport(before: number): Promise<RunReport> {
  while (runs.length <= before) await new Promise((resolve) => setTimeout(resolve, 1));
  return runs[before]!;
}

/** One streamed chat through the whole path: when each text chunk reached the SDK, and when the worker made it. */
async function viaPath(model: string, tokens: number) {
  const before = runs.length;
  const started = now();
  const received: number[] = [];
  const stream = await client().chat.completions.create(endlessStream(model, tokens));
  for await (const chunk of stream) if (chunk.choices[0]?.delta.content) received.push(now());
  const report = await nextReport(before);
  return { started, received, generated: report.tokenTimes ?? [] };
}

const bench = {
  device: () => lantern.device,

  /**
   * Where the decode cost of the path goes: the engine's pace (tokens/s) when the page reads a stream's raw bytes
   * without the SDK (`raw`), and when it does not read it until it is over (`unread`).
   */
  async variant(tokens: number, mode: 'raw' | 'unread') {
    const before = runs.length;
    const started = now();
    const response = await fetch('/v1/chat/completions', {
      method: 'POST',
      headers: { authorization: `Bearer ${keys[0]}`, 'content-type': 'application/json' },
      body: JSON.stringify(endlessStream(CHAT, tokens)),
    });
    if (mode === 'unread') await nextReport(before);
    const received: number[] = [];
    const reader = response.body!.getReader();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) received.push(now());
    const report = await nextReport(before);
    return { started, received, generated: report.tokenTimes ?? [] };
  },

  /**
   * The browser's own cost of a request answered by a service worker: a /v1 request without a key, which Lantern
   * refuses at once. With `key`, a key nobody issued: the same answer after the key check, which reads IndexedDB.
   * Milliseconds, one per request.
   */
  async roundTrip(count: number, key?: string) {
    const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
    const times: number[] = [];
    for (let i = 0; i < count; i++) {
      const started = performance.now();
      await (await fetch('/v1/models', { headers })).text();
      times.push(performance.now() - started);
    }
    return times;
  },

  /**
   * Alternating direct and whole-path runs of `tokens` tokens each, after a warm-up of both: the browser keeps
   * optimising onnxruntime's WebAssembly in the background for a while after it loads.
   */
  async chat(model: string, tokens: number, count: number) {
    if (!warm.has(model)) {
      for (let i = 0; i < WARM_UP.runs; i++) {
        await direct.chat(model, endlessEngineRequest(WARM_UP.tokens));
        await viaPath(model, WARM_UP.tokens);
      }
      warm.add(model);
    }
    const directRuns = [];
    const pathRuns = [];
    for (let i = 0; i < count; i++) {
      directRuns.push(await direct.chat(model, endlessEngineRequest(tokens)));
      pathRuns.push(await viaPath(model, tokens));
    }
    return { direct: directRuns, path: pathRuns };
  },

  /** Embeddings of `size` inputs: direct, through /v1 in one request (the SDK's base64), and one request per input. */
  async embeddings(size: number, count: number) {
    const input = Array.from({ length: size }, (_, i) => `Sentence ${i} is about cats, dogs and lanterns in the rain.`);
    const timed = async (run: () => Promise<unknown>) => {
      const started = performance.now();
      await run();
      return performance.now() - started;
    };
    const viaPath = () => client().embeddings.create({ model: EMBED, input });
    const oneByOne = async () => {
      for (const text of input) await client().embeddings.create({ model: EMBED, input: text });
    };
    await direct.embed(EMBED, input);
    await viaPath();
    const result = { direct: [] as number[], path: [] as number[], oneByOne: [] as number[] };
    for (let i = 0; i < count; i++) {
      result.direct.push(await direct.embed(EMBED, input));
      result.path.push(await timed(viaPath));
      if (size > 1) result.oneByOne.push(await timed(oneByOne));
    }
    return result;
  },

  /** Keeps a speech clip's bytes (base64) in the page under its name, for the transcriptions (bench/transcription.ts). */
  audio(name: string, base64: string) {
    clips.set(
      name,
      Uint8Array.from(atob(base64), (c) => c.charCodeAt(0)),
    );
  },

  /** One transcription of a kept clip by the engine in the direct worker, timed there: ms, text, audio seconds. */
  transcribeDirect: (model: string, name: string) => direct.transcribe(model, clips.get(name)!.slice(), name),

  /** One transcription of a kept clip through /v1, by the SDK with a `File` made here: ms and text. */
  async transcribePath(model: string, name: string) {
    const started = performance.now();
    const file = new File([clips.get(name)!], name, { type: 'audio/wav' });
    const { text } = await client().audio.transcriptions.create({ file, model });
    return { ms: performance.now() - started, text };
  },

  /** One synthesis by the engine in the direct worker (bench/speech.ts): ms to first audio and to the end, seconds. */
  speakDirect: (model: string, input: string, voice: string, format: SpeechFormat) =>
    direct.speak(model, { input, voice, speed: 1, format }),

  /** The same through /v1, by the SDK, its body read as it arrives: ms to the first audio and to the end, bytes. */
  async speakPath(model: string, input: string, voice: string, format: SpeechFormat, stream: 'audio' | 'sse') {
    const started = performance.now();
    const response = await client().audio.speech.create({
      model,
      input,
      voice,
      response_format: format,
      stream_format: stream,
    });
    return readSpeech(response, stream, started);
  },

  /** ms to encode an input's speech into `format` in the direct worker (see DirectWorker.encode). */
  encodeSpeech: (model: string, input: string, voice: string, format: SpeechFormat) =>
    direct.encode(model, input, voice, format),

  /** What the speech model says, as `wav` through /v1, written down by the speech-to-text model through /v1. */
  async speechRoundTrip(speech: string, transcription: string, input: string, voice: string, speed: number) {
    const app = client();
    const spoken = await app.audio.speech.create({ model: speech, input, voice, speed, response_format: 'wav' });
    const file = new File([await spoken.arrayBuffer()], 'speech.wav', { type: 'audio/wav' });
    return (await app.audio.transcriptions.create({ file, model: transcription })).text;
  },

  /** ms to the first token of a question about one image (a data URL), the engine in the direct worker called. */
  async imageDirect(model: string, url: string, question: string) {
    const request = imageChatRequest(url, question);
    const { started, tokenTimes } = await direct.chat(model, request);
    return tokenTimes[0]! - started;
  },

  /** ms to the first token of the same through /v1, streamed by the SDK; and the prompt's tokens. */
  async imagePath(model: string, url: string, question: string) {
    const { ms, usage } = await firstImageToken(model, imageMessages(url, question));
    return { ms, promptTokens: usage.prompt_tokens };
  },

  /** ms to decode, process and encode an image with the vision encoder alone, in the direct worker. */
  imageEncoder: (folder: string, url: string) => direct.encodeImage(folder, url),

  /** ms to the first token of a second turn about the same image, through /v1; the prompt tokens found cached. */
  async imageNextTurn(model: string, url: string, question: string) {
    // Both turns from one key, as an app's conversation is: a key reuses only its own cached prefixes.
    const app = client();
    const first = await firstImageToken(model, imageMessages(url, question), app);
    const { ms, usage } = await firstImageToken(
      model,
      [
        ...imageMessages(url, question),
        { role: 'assistant', content: first.reply },
        { role: 'user', content: 'How many shapes are there?' },
      ],
      app,
    );
    return { ms, cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? 0 };
  },

  /**
   * A key of its own for a vector store (bench/file-search.ts): a store is its key's, and each key may search 120
   * times a minute.
   */
  fileSearchKey: async () => (await lantern.keys.issue('file search')).key,

  /**
   * Uploads files through the SDK, makes a vector store of them and waits until the service worker has indexed them;
   * with the engine worker's embedding runs meanwhile (their ms, from its run reports) and what the origin's storage
   * grew by (`navigator.storage.estimate()`).
   */
  async fileSearchIndex(key: string, files: BenchFile[], chunking: BenchChunking) {
    const usage = async () => (await navigator.storage.estimate()).usage ?? 0;
    const before = { runs: runs.length, usage: await usage() };
    const indexed = await indexFiles(client(key), files, chunking, (f) => new File([f.text], f.name, { type: f.type }));
    const embeddings = runs.slice(before.runs).filter((run) => run.task === 'embeddings');
    return {
      ...indexed,
      embedMs: embeddings.reduce((sum, run) => sum + run.milliseconds, 0),
      embedCalls: embeddings.length,
      storageGrown: (await usage()) - before.usage,
    };
  },

  /** Each query through `vectorStores.search`, in turn: ms and the files found, best first. */
  fileSearchSearch: (key: string, storeId: string, queries: string[], maxResults: number) =>
    searchStore(client(key), storeId, queries, maxResults),

  /** What a store's chunk records in IndexedDB hold (read as the service worker wrote them). */
  fileSearchRecords: (storeId: string) => chunkRecords((documents ??= indexedDbDocumentStorage()), storeId),

  /** `streams` simultaneous streamed chats of `tokens` tokens each, spread over the keys. */
  async concurrent(model: string, streams: number, tokens: number) {
    const started = now();
    const results = await Promise.all(
      Array.from({ length: streams }, async () => {
        const received: number[] = [];
        const stream = await client().chat.completions.create(endlessStream(model, tokens));
        for await (const chunk of stream) if (chunk.choices[0]?.delta.content) received.push(now());
        return received;
      }),
    );
    return { started, received: results };
  },

  /**
   * A new request's time to first token while `streams` others decode (0: on an idle model), and one request of `n`
   * choices against `n` one after another (bench/batching.ts). Each concurrent request on a key of its own.
   */
  ...sdkBatchingRunner(() => client(), now),
};

/** A streamed chat through /v1 on the next key: ms to its first text, its usage, its reply. */
const firstImageToken = (model: string, messages: OpenAI.ChatCompletionMessageParam[], app = client()) =>
  streamedFirstToken(app, model, messages);

Object.assign(window, { bench });
export type Bench = typeof bench;
