/**
 * Speech audio in the page, for the speech tab and the chat's "Read aloud": a `/v1/audio/speech` answer read as it
 * arrives (its bytes, or its `speech.audio.delta` events), raw pcm played through Web Audio while it streams, and the
 * finished audio as a Blob an `<audio>` element plays and a link downloads.
 */
import type OpenAI from 'openai';
import { concatBytes } from '../bytes/byte-chunks.ts';

export type SpeechFormat = NonNullable<OpenAI.Audio.SpeechCreateParams['response_format']>;
export type StreamFormat = NonNullable<OpenAI.Audio.SpeechCreateParams['stream_format']>;

/** OpenAI's `pcm`: 24 kHz, 16-bit little-endian, mono, no header. Lantern's `wav` carries the same samples. */
export const PCM_SAMPLE_RATE = 24_000;

export { OPENAI_VOICES } from '../client/index.ts';

/**
 * Each format's file extension and the type its Blob is given. Opus comes as Ogg Opus labelled `audio/opus`; the Blob
 * says `audio/ogg` so every browser's `<audio>` takes it. `pcm` has no header, so no player reads it: the page plays
 * it wrapped in a WAV header (`wavFromPcm`), and downloads the bytes as they came.
 */
export const FORMAT_FILES: Record<SpeechFormat, { extension: string; type: string }> = {
  mp3: { extension: 'mp3', type: 'audio/mpeg' },
  opus: { extension: 'opus', type: 'audio/ogg' },
  aac: { extension: 'aac', type: 'audio/aac' },
  flac: { extension: 'flac', type: 'audio/flac' },
  wav: { extension: 'wav', type: 'audio/wav' },
  pcm: { extension: 'pcm', type: 'application/octet-stream' },
};

/** The formats whose samples the page reads itself, so they can play through Web Audio as they arrive. */
export const progressiveFormat = (format: SpeechFormat) => format === 'pcm' || format === 'wav';

/** Bytes of a canonical WAV header (RIFF, `fmt `, `data`), as Lantern's streaming `wav` writes it. */
const WAV_HEADER_BYTES = 44;

/** The usage of `speech.audio.done`. */
export interface SpeechUsage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
}

/**
 * Reads a speech answer as it arrives, handing each piece of audio (in the request's format) to `onAudio`: the body's
 * chunks (`stream_format: "audio"`), or the base64 audio of each `speech.audio.delta` event (`"sse"`). Resolves with
 * the usage of `speech.audio.done` (sse only); an error event rejects.
 */
export async function readSpeech(
  response: Response,
  streamFormat: StreamFormat,
  onAudio: (bytes: Uint8Array) => void,
): Promise<SpeechUsage | undefined> {
  if (!response.body) throw new Error('The answer has no body.');
  const reader = response.body.getReader();
  if (streamFormat === 'audio') {
    for (let read = await reader.read(); !read.done; read = await reader.read()) onAudio(read.value);
    return undefined;
  }
  const decoder = new TextDecoder();
  let buffer = '';
  let usage: SpeechUsage | undefined;
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    buffer += decoder.decode(read.value, { stream: true });
    const frames = buffer.split('\n\n');
    buffer = frames.pop()!;
    for (const frame of frames) {
      const data = frame
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n');
      if (!data) continue;
      const event = JSON.parse(data) as
        | { type: 'speech.audio.delta'; audio: string }
        | { type: 'speech.audio.done'; usage: SpeechUsage }
        | { error: { message: string } };
      if ('error' in event) throw new Error(event.error.message);
      if (event.type === 'speech.audio.delta') onAudio(base64Bytes(event.audio));
      else if (event.type === 'speech.audio.done') usage = event.usage;
    }
  }
  return usage;
}

function base64Bytes(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/**
 * The samples of a WAV file's bytes as they arrive: the header (its rate read from it) is held back until it is whole,
 * then each chunk's 16-bit samples are passed on. Lantern's streaming `wav` is mono s16le with the canonical 44-byte
 * header and unknown sizes; anything else is left to the `<audio>` element when the file is complete.
 */
export class WavStreamReader {
  sampleRate: number | undefined;
  #header: Uint8Array[] = [];
  #headerBytes = 0;
  /** Whether the header said what this reader plays (mono 16-bit PCM): false stops it passing samples on. */
  playable = true;

  constructor(private readonly onPcm: (bytes: Uint8Array, sampleRate: number) => void) {}

  push(bytes: Uint8Array) {
    if (this.sampleRate !== undefined) return this.onPcm(bytes, this.sampleRate);
    if (!this.playable) return;
    this.#header.push(bytes);
    this.#headerBytes += bytes.length;
    if (this.#headerBytes < WAV_HEADER_BYTES) return;
    const all = concatBytes(this.#header);
    const view = new DataView(all.buffer);
    const text = (at: number) => String.fromCharCode(...all.subarray(at, at + 4));
    const pcm = view.getUint16(20, true) === 1 && view.getUint16(22, true) === 1 && view.getUint16(34, true) === 16;
    if (text(0) !== 'RIFF' || text(8) !== 'WAVE' || text(36) !== 'data' || !pcm) {
      this.playable = false;
      return;
    }
    this.sampleRate = view.getUint32(24, true);
    if (all.length > WAV_HEADER_BYTES) this.onPcm(all.subarray(WAV_HEADER_BYTES), this.sampleRate);
  }
}

/** Raw 16-bit mono samples as a WAV file, for an `<audio>` element: what `pcm` is, told to a player. */
export function wavFromPcm(pcm: Uint8Array, sampleRate: number): Blob {
  const header = new DataView(new ArrayBuffer(WAV_HEADER_BYTES));
  const ascii = (at: number, text: string) => [...text].forEach((c, i) => header.setUint8(at + i, c.charCodeAt(0)));
  const length = pcm.length - (pcm.length % 2);
  ascii(0, 'RIFF');
  header.setUint32(4, 36 + length, true);
  ascii(8, 'WAVE');
  ascii(12, 'fmt ');
  header.setUint32(16, 16, true);
  header.setUint16(20, 1, true); // PCM
  header.setUint16(22, 1, true); // mono
  header.setUint32(24, sampleRate, true);
  header.setUint32(28, sampleRate * 2, true);
  header.setUint16(32, 2, true);
  header.setUint16(34, 16, true);
  ascii(36, 'data');
  header.setUint32(40, length, true);
  return new Blob([header.buffer, pcm.slice(0, length)], { type: 'audio/wav' });
}

/** How far ahead of the clock the first samples are scheduled: enough that starting does not click. */
const START_LEAD_S = 0.05;

/**
 * Raw 16-bit little-endian mono samples played through Web Audio as they arrive: each chunk becomes a buffer scheduled
 * right after the one before, so the speech plays while the rest is still being made. A chunk may end inside a
 * sample; its odd byte waits for the next. Made in a click's handler (an AudioContext needs a user's gesture to start).
 */
export class PcmPlayer {
  readonly #context = new AudioContext();
  readonly #sources = new Set<AudioBufferSourceNode>();
  #next = 0;
  #odd: number | undefined;
  #ended: Promise<void> = Promise.resolve();
  /** Samples handed to Web Audio so far. */
  scheduledSamples = 0;
  /** Seconds of audio handed to Web Audio so far. */
  scheduledSeconds = 0;

  constructor() {
    void this.#context.resume();
  }

  push(bytes: Uint8Array, sampleRate: number) {
    if (this.#context.state === 'closed' || bytes.length === 0) return;
    let data = bytes;
    if (this.#odd !== undefined) {
      data = new Uint8Array(bytes.length + 1);
      data[0] = this.#odd;
      data.set(bytes, 1);
      this.#odd = undefined;
    }
    if (data.length % 2) this.#odd = data[data.length - 1];
    const count = data.length >> 1;
    if (count === 0) return;
    const view = new DataView(data.buffer, data.byteOffset, count * 2);
    const samples = new Float32Array(count);
    for (let i = 0; i < count; i++) samples[i] = view.getInt16(i * 2, true) / 32768;
    // A buffer at the audio's own rate: Web Audio resamples it to the device's.
    const buffer = this.#context.createBuffer(1, count, sampleRate);
    buffer.copyToChannel(samples, 0);
    const source = this.#context.createBufferSource();
    source.buffer = buffer;
    source.connect(this.#context.destination);
    // After the last buffer, or a little ahead of now when the stream fell behind the playback.
    this.#next = Math.max(this.#next, this.#context.currentTime + START_LEAD_S);
    source.start(this.#next);
    this.#next += buffer.duration;
    this.#sources.add(source);
    this.#ended = new Promise((resolve) =>
      source.addEventListener('ended', () => {
        this.#sources.delete(source);
        resolve();
      }),
    );
    this.scheduledSamples += count;
    this.scheduledSeconds += buffer.duration;
  }

  /** Resolves once everything scheduled so far has played. */
  ended(): Promise<void> {
    return this.#ended;
  }

  /** Silences it now and frees the audio device. */
  stop() {
    for (const source of this.#sources) source.stop();
    this.#sources.clear();
    if (this.#context.state !== 'closed') void this.#context.close();
  }
}

/**
 * The length of finished audio in seconds, decoded by the browser (null where it cannot decode the format): what the
 * real-time factor divides by, and a check that the `<audio>` element will play it.
 */
export async function decodedSeconds(blob: Blob): Promise<number | null> {
  try {
    const context = new OfflineAudioContext(1, 1, PCM_SAMPLE_RATE);
    const audio = await context.decodeAudioData(await blob.arrayBuffer());
    return audio.duration;
  } catch {
    return null;
  }
}

/** A speech request as it goes: what has arrived, and when. */
export interface SpeechProgress {
  /** Bytes of audio received so far, in the format asked for. */
  bytes: number;
  /** Milliseconds from sending to the first audio. */
  firstAudioMs?: number;
  /** Seconds of audio handed to Web Audio as it arrived (none unless a player was given). */
  streamedSeconds: number;
  /** Samples handed to Web Audio as they arrived. */
  scheduledSamples: number;
}

/** A speech answer, complete. */
export interface SpokenAudio extends SpeechProgress {
  /** The audio as the API sent it, typed for a download. */
  file: Blob;
  /** What an `<audio>` element plays: the file, or for pcm and wav its samples under a WAV header of the true length. */
  playable: Blob;
  /** Seconds of audio, or null where this browser cannot decode the format. */
  seconds: number | null;
  /** Milliseconds from sending to the last byte. */
  totalMs: number;
  usage?: SpeechUsage;
}

/**
 * Sends a speech request through the openai client and reads its answer as it arrives; with a `player`, pcm and wav
 * play through it while they stream. `onProgress` hears each piece as it lands.
 */
export async function requestSpeech(
  client: OpenAI,
  params: OpenAI.Audio.SpeechCreateParams,
  options: { signal?: AbortSignal; player?: PcmPlayer; onProgress?: (progress: SpeechProgress) => void } = {},
): Promise<SpokenAudio> {
  const format = params.response_format ?? 'mp3';
  const { player } = options;
  const progress: SpeechProgress = { bytes: 0, streamedSeconds: 0, scheduledSamples: 0 };
  const chunks: Uint8Array[] = [];
  const play = (pcm: Uint8Array, sampleRate: number) => {
    player!.push(pcm, sampleRate);
    progress.streamedSeconds = player!.scheduledSeconds;
    progress.scheduledSamples = player!.scheduledSamples;
  };
  const wav = player && format === 'wav' ? new WavStreamReader(play) : undefined;
  const sent = performance.now();
  const response = await client.audio.speech.create(params, { signal: options.signal });
  const usage = await readSpeech(response, params.stream_format ?? 'audio', (bytes) => {
    if (bytes.length === 0) return;
    progress.firstAudioMs ??= Math.round(performance.now() - sent);
    progress.bytes += bytes.length;
    chunks.push(bytes);
    if (wav) wav.push(bytes);
    else if (player && format === 'pcm') play(bytes, PCM_SAMPLE_RATE);
    options.onProgress?.({ ...progress });
  });
  const totalMs = Math.round(performance.now() - sent);
  const data = concatBytes(chunks);
  const file = new Blob([data], { type: FORMAT_FILES[format].type });
  let playable = file;
  let seconds: number | null;
  if (format === 'pcm') {
    playable = wavFromPcm(data, PCM_SAMPLE_RATE);
    seconds = Math.floor(data.length / 2) / PCM_SAMPLE_RATE;
  } else {
    // A streamed WAV's sizes are unknown (0xFFFFFFFF): players read on, but some report a day-long duration.
    let samples: { pcm: Uint8Array; sampleRate: number } | undefined;
    if (format === 'wav') new WavStreamReader((pcm, sampleRate) => (samples = { pcm, sampleRate })).push(data);
    if (samples) playable = wavFromPcm(samples.pcm, samples.sampleRate);
    seconds = samples ? Math.floor(samples.pcm.length / 2) / samples.sampleRate : await decodedSeconds(playable);
  }
  return { ...progress, file, playable, seconds, totalMs, ...(usage && { usage }) };
}
