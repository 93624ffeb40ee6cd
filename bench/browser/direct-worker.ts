/// <reference lib="webworker" />
/**
 * The baseline of the browser benchmarks: the same local engine, on the same device, called directly inside a worker,
 * with no service worker, router, port, SSE or SDK between the caller and the tokens.
 */
import * as Comlink from 'comlink';
import { probeEncoders, type LoadOptional, type SpeechFormat } from '../../src/audio/index.ts';
import type { ChatRequest, ModelTask, SpeakRequest } from '../../src/engine-interface/index.ts';
import type { LocalEngine, LocalTarget } from '../../src/engines/local-engine.ts';
import { usableCandidates, type ModelProfile } from '../../src/models/model-profile.ts';
import { createBrowserEngine } from '../../src/worker/browser-engine.ts';
import { deviceCapabilities } from '../../src/worker/device.ts';
import type { DeviceInfo, EngineWorkerConfig } from '../../src/worker/protocol.ts';
import { pcmToFloat, timeEncoder } from './speech-measures.ts';

/** The vision encoder alone, loaded once per folder: what the bench reports apart from the first token. */
const encoders = new Map<string, Promise<(url: string) => Promise<number>>>();
async function loadEncoder(folder: string) {
  const { AutoImageProcessor, AutoModelForImageTextToText, RawImage } = await import('@huggingface/transformers');
  const [model, processor] = await Promise.all([
    AutoModelForImageTextToText.from_pretrained(folder, { dtype: 'fp32', device: 'wasm' }),
    AutoImageProcessor.from_pretrained(folder),
  ]);
  const encoder = model as unknown as { encode_image(inputs: { pixel_values: unknown }): Promise<unknown> };
  return async (url: string) => {
    const started = performance.now();
    const image = await RawImage.fromBlob(await (await fetch(url)).blob());
    const { pixel_values } = (await processor(image)) as { pixel_values: unknown };
    await encoder.encode_image({ pixel_values });
    return performance.now() - started;
  };
}

/**
 * The app's optional encoders (mp3, aac) for the encoder measure, from where Lantern's Vite plugin builds them: beside
 * the engine worker (`/lantern/optional/`), not beside this worker, where the engine's own loader
 * (src/worker/optional-modules.ts, whose contract this repeats) would look. As that loader does, it hands them this
 * worker's mediabunny, the instance its encoders register into.
 */
const loadOptional: LoadOptional = (name) => {
  globalThis.__lanternMediabunny ??= () => import('mediabunny');
  const file = `${name.replace(/^@/, '').replace(/[^\w.-]+/g, '-')}.js`;
  return import(/* @vite-ignore */ new URL(`/lantern/optional/${file}`, self.location.origin).href);
};

/** Each input's speech as `pcm` (one piece a sentence, as floats), synthesised once for the encoder measure. */
const spokenPieces = new Map<string, Promise<Float32Array[]>>();

let engine: LocalEngine;
let target: (id: string, task: ModelTask, images?: boolean) => LocalTarget;
const now = () => performance.timeOrigin + performance.now();

const direct = {
  /** Starts the local engine; each model ID is served by the first candidate this device can run, as the router picks. */
  async start(config: EngineWorkerConfig & { profile: ModelProfile }) {
    let device: DeviceInfo;
    ({ engine, device } = await createBrowserEngine(config));
    target = (id, task, images = false) => {
      const candidates = usableCandidates(config.profile[id]!, deviceCapabilities(device));
      return { id, task, candidate: candidates.find((c) => !images || c.images)! };
    };
  },
  /** One chat call: when it started and when each text delta was generated, in epoch milliseconds. */
  async chat(model: string, request: ChatRequest) {
    const tokenTimes: number[] = [];
    const started = now();
    // A request with images goes to a candidate that reads them, as the router sends it.
    const chat = target(
      model,
      'chat',
      request.messages.some((m) => m.images?.length),
    );
    const result = await engine.run('chat', chat, request, {
      onEvent: (event) => event.type === 'delta' && tokenTimes.push(now()),
    });
    return { started, tokenTimes, usage: result.usage };
  },
  /** One embeddings call, in milliseconds. */
  async embed(model: string, input: string[]) {
    const started = performance.now();
    await engine.run('embeddings', target(model, 'embeddings'), { input });
    return performance.now() - started;
  },
  /** One transcription of a WAV file, as /v1 asks for it by default (bench/transcription.ts): ms, text, seconds. */
  async transcribe(model: string, bytes: Uint8Array, name: string) {
    const audio = { bytes, name, type: 'audio/wav' };
    const started = performance.now();
    const result = await engine.run('transcription', target(model, 'transcription'), {
      audio,
      task: 'transcribe',
      temperature: 0,
      words: false,
    });
    return { ms: performance.now() - started, text: result.text, duration: result.duration };
  },
  /**
   * One synthesis (bench/speech.ts), timed here: ms to the first audio bytes and to the end, the audio's seconds and
   * bytes (its encoding included, in this worker, as the engine worker encodes it).
   */
  async speak(model: string, request: SpeakRequest) {
    let firstAudioMs = NaN;
    let bytes = 0;
    const started = performance.now();
    const result = await engine.run('speech', target(model, 'speech'), request, {
      onEvent: (event) => {
        if (event.type !== 'audio') return;
        if (bytes === 0) firstAudioMs = performance.now() - started;
        bytes += event.bytes.byteLength;
      },
    });
    return { ms: performance.now() - started, firstAudioMs, seconds: result.seconds, bytes };
  },
  /**
   * ms to encode `input`'s speech (synthesised once as `pcm`, then kept) into `format`, pushed a sentence at a time as
   * the route pushes it; its seconds, and the path the format takes in this worker (WebCodecs where Chromium has it).
   */
  async encode(model: string, input: string, voice: string, format: SpeechFormat) {
    const key = `${voice}\n${input}`;
    if (!spokenPieces.has(key)) {
      const pieces: Float32Array[] = [];
      const spoken = engine
        .run(
          'speech',
          target(model, 'speech'),
          { input, voice, speed: 1, format: 'pcm' },
          {
            onEvent: (event) => event.type === 'audio' && pieces.push(pcmToFloat(event.bytes)),
          },
        )
        .then(() => pieces);
      spokenPieces.set(key, spoken);
    }
    const pieces = await spokenPieces.get(key)!;
    const { ms } = await timeEncoder(format, pieces, loadOptional);
    const seconds = pieces.reduce((n, piece) => n + piece.length, 0) / 24_000;
    const { paths } = await probeEncoders({ loadOptional });
    return { ms, seconds, path: paths[format] };
  },
  /** ms to decode, resize and encode one image (a data URL) with the vision encoder of the model at `folder`. */
  async encodeImage(folder: string, url: string): Promise<number> {
    // As the profile names it (a path of the origin), which the engine's transformers.js settings resolve.
    if (!encoders.has(folder)) encoders.set(folder, loadEncoder(folder));
    return (await encoders.get(folder)!)(url);
  },
};

export type DirectWorker = typeof direct;
Comlink.expose(direct);
