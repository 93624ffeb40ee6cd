/**
 * `flac`: libFLAC (BSD) through `@mediabunny/flac-encoder`, which encodes in a worker of its own (a blob-URL `Worker`
 * in browsers, so a Content-Security-Policy must allow `worker-src blob:`; `worker_threads` in Node), muxed by
 * mediabunny append-only: STREAMINFO says "total samples unknown" (0), as the FLAC format allows for streams.
 */
import { registerFlacEncoder } from '@mediabunny/flac-encoder';
import { FlacOutputFormat } from 'mediabunny';
import type { AudioStreamEncoder } from './audio-stream-encoder.ts';
import { startMediabunnyStream } from './mediabunny-stream.ts';

export function createFlacStream(sampleRate: number): Promise<AudioStreamEncoder> {
  registerFlacEncoder(); // once per realm; later calls do nothing
  return startMediabunnyStream({
    format: new FlacOutputFormat({ appendOnly: true }),
    codec: 'flac',
    sampleRate,
    sampleFormat: 's16',
  });
}
