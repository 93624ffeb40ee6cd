/**
 * What bench/speech.ts measures the same way in Node and in the browser (the bench page, its direct worker): a
 * `/v1/audio/speech` answer read chunk by chunk as it arrives, timing the first audio (the first bytes of the body, or
 * the first `speech.audio.delta` event of `stream_format: "sse"`) and counting the audio's bytes, which the bench
 * compares with the engine's own; and one encoder's cost on speech already synthesised.
 */
import { createParser } from 'eventsource-parser';
import { createAudioEncoder, type LoadOptional, type SpeechFormat } from '../../src/audio/index.ts';

export interface SpeechReading {
  /** ms from `started` to the whole answer read. */
  ms: number;
  /** ms from `started` to the first audio: its first byte, or the first delta event of SSE. */
  firstAudioMs: number;
  /** Bytes of audio: the body's, or the deltas' once decoded from base64. */
  bytes: number;
}

/** Bytes of a base64 string once decoded, without decoding it. */
const base64Bytes = (text: string) => (text.length * 3) / 4 - (text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0);

/**
 * Reads `response` to its end: as audio bytes (`stream: 'audio'`) or as server-sent events (`'sse'`). Times are from
 * `started`, a `performance.now()` taken before the request was sent.
 */
export async function readSpeech(response: Response, stream: 'audio' | 'sse', started: number): Promise<SpeechReading> {
  let firstAudioMs = NaN;
  let bytes = 0;
  const audio = (size: number) => {
    if (size === 0) return;
    if (Number.isNaN(firstAudioMs)) firstAudioMs = performance.now() - started;
    bytes += size;
  };
  const parser = createParser({
    onEvent: (event) => {
      const data = JSON.parse(event.data) as { type: string; audio?: string };
      if (data.type === 'speech.audio.delta') audio(base64Bytes(data.audio!));
    },
  });
  const decoder = new TextDecoder();
  const reader = response.body!.getReader();
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    if (stream === 'audio') audio(chunk.value.byteLength);
    else parser.feed(decoder.decode(chunk.value, { stream: true }));
  }
  return { ms: performance.now() - started, firstAudioMs, bytes };
}

/** 16-bit little-endian samples (`pcm`) as floats in [-1, 1], as an encoder takes them. */
export function pcmToFloat(bytes: Uint8Array): Float32Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const samples = new Float32Array(bytes.byteLength >> 1);
  for (let i = 0; i < samples.length; i++) samples[i] = view.getInt16(i * 2, true) / 32768;
  return samples;
}

/**
 * ms to encode `pieces` (24 kHz mono, one a sentence, pushed in turn as the speech route pushes them) into `format`
 * and finish, the encoder's creation included (a format's first use loads its encoder: a warm-up run goes first).
 */
export async function timeEncoder(
  format: SpeechFormat,
  pieces: readonly Float32Array[],
  loadOptional?: LoadOptional,
): Promise<{ ms: number; bytes: number }> {
  const started = performance.now();
  const encoder = await createAudioEncoder(format, 24_000, loadOptional && { loadOptional });
  let bytes = 0;
  try {
    for (const piece of pieces) for (const chunk of await encoder.push(piece)) bytes += chunk.byteLength;
    for (const chunk of await encoder.finish()) bytes += chunk.byteLength;
  } finally {
    encoder.close();
  }
  return { ms: performance.now() - started, bytes };
}
