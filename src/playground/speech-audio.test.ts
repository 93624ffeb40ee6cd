import { describe, expect, it } from 'vitest';
import { concatBytes } from '../bytes/byte-chunks.ts';
import { readSpeech, WavStreamReader, wavFromPcm } from './speech-audio.ts';

/** A body that arrives in the pieces given, as a stream does. */
const streamed = (pieces: (string | Uint8Array)[], type: string) =>
  new Response(
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (const piece of pieces)
          controller.enqueue(typeof piece === 'string' ? new TextEncoder().encode(piece) : piece);
        controller.close();
      },
    }),
    { headers: { 'content-type': type } },
  );

const base64 = (bytes: number[]) => btoa(String.fromCharCode(...bytes));

describe('readSpeech', () => {
  it('passes the bytes of an audio stream on as they arrive', async () => {
    const seen: number[][] = [];
    const usage = await readSpeech(streamed([new Uint8Array([1, 2]), new Uint8Array([3])], 'audio/pcm'), 'audio', (b) =>
      seen.push([...b]),
    );
    expect(seen).toEqual([[1, 2], [3]]);
    expect(usage).toBeUndefined();
  });

  it('decodes the audio of speech.audio.delta events, split anywhere, and returns the usage of speech.audio.done', async () => {
    const events =
      `data: ${JSON.stringify({ type: 'speech.audio.delta', audio: base64([1, 2, 3]) })}\n\n` +
      `data: ${JSON.stringify({ type: 'speech.audio.delta', audio: base64([4]) })}\n\n` +
      `data: ${JSON.stringify({ type: 'speech.audio.done', usage: { input_tokens: 2, output_tokens: 8, total_tokens: 10 } })}\n\n`;
    const seen: number[][] = [];
    const usage = await readSpeech(
      streamed([events.slice(0, 17), events.slice(17, 90), events.slice(90)], 'text/event-stream'),
      'sse',
      (b) => seen.push([...b]),
    );
    expect(seen).toEqual([[1, 2, 3], [4]]);
    expect(usage).toEqual({ input_tokens: 2, output_tokens: 8, total_tokens: 10 });
  });

  it('rejects with the message of an error event', async () => {
    const events = `data: ${JSON.stringify({ error: { message: 'The model failed.' } })}\n\n`;
    await expect(readSpeech(streamed([events], 'text/event-stream'), 'sse', () => {})).rejects.toThrow(
      'The model failed.',
    );
  });
});

describe('WAV', () => {
  it('wraps pcm in a header of its true length, and reads the samples of a streamed WAV back as they arrive', async () => {
    const pcm = new Uint8Array([1, 0, 2, 0, 3, 0]);
    const file = new Uint8Array(await wavFromPcm(pcm, 24_000).arrayBuffer());
    expect(file.length).toBe(44 + 6);
    expect(new DataView(file.buffer).getUint32(40, true)).toBe(6);
    // Streamed, with the sizes unknown as a streaming writer leaves them, and cut inside the header.
    const streaming = file.slice();
    new DataView(streaming.buffer).setUint32(40, 0xffffffff, true);
    const seen: { bytes: number[]; rate: number }[] = [];
    const reader = new WavStreamReader((bytes, rate) => seen.push({ bytes: [...bytes], rate }));
    reader.push(streaming.subarray(0, 20));
    reader.push(streaming.subarray(20, 46));
    reader.push(streaming.subarray(46));
    expect(seen).toEqual([
      { bytes: [1, 0], rate: 24_000 },
      { bytes: [2, 0, 3, 0], rate: 24_000 },
    ]);
    expect([...concatBytes(seen.map((s) => new Uint8Array(s.bytes)))]).toEqual([...pcm]);
  });

  it('passes nothing on from a WAV it does not play (not 16-bit mono PCM)', () => {
    const header = new Uint8Array(44);
    const seen: Uint8Array[] = [];
    const reader = new WavStreamReader((bytes) => seen.push(bytes));
    reader.push(header);
    reader.push(new Uint8Array([1, 2]));
    expect(reader.playable).toBe(false);
    expect(seen).toEqual([]);
  });
});
