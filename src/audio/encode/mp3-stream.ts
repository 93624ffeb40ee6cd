/**
 * `mp3`: LAME from `wasm-media-encoders` (LGPL: a dependency, kept out of Lantern's files; see optional-encoders.ts),
 * in this thread. At 24 kHz LAME writes MPEG-2 Layer III frames (`FF F3`) from the first byte: no ID3 tag and no
 * Xing/Info frame, which would have to be patched at the end (the AI SDK and browsers sniff mp3 from those first
 * bytes).
 */
import type { AudioStreamEncoder } from './audio-stream-encoder.ts';
import { BITRATES, formatsWithoutOptional } from './encoder-paths.ts';
import { loadOptionalEncoder, type EncoderOptions } from './optional-encoders.ts';

/** The parts of `wasm-media-encoders` used here (typed locally: Lantern's code reaches it only through the loader). */
interface Mp3Encoder {
  configure(params: { channels: 1; sampleRate: number; bitrate: number }): void;
  /** The bytes ready so far, in the encoder's own memory (valid until its next call). */
  encode(samples: readonly Float32Array[]): Uint8Array;
  finalize(): Uint8Array;
}
interface WasmMediaEncoders {
  createMp3Encoder(): Promise<Mp3Encoder>;
}

const isWasmMediaEncoders = (module: unknown): module is WasmMediaEncoders =>
  typeof (module as Partial<WasmMediaEncoders> | null)?.createMp3Encoder === 'function';

export async function createMp3Stream(sampleRate: number, options?: EncoderOptions): Promise<AudioStreamEncoder> {
  const module = await loadOptionalEncoder('wasm-media-encoders', options, await formatsWithoutOptional(sampleRate));
  if (!isWasmMediaEncoders(module)) {
    throw new TypeError('The module loaded as wasm-media-encoders has no createMp3Encoder.');
  }
  let encoder: Mp3Encoder | undefined = await module.createMp3Encoder();
  encoder.configure({ channels: 1, sampleRate, bitrate: BITRATES.mp3 / 1000 });
  const open = () => {
    if (!encoder) throw new Error('The mp3 encoder is already finished.');
    return encoder;
  };
  const copied = (bytes: Uint8Array) => (bytes.length === 0 ? [] : [bytes.slice()]);
  return {
    async push(samples) {
      const current = open();
      return samples.length === 0 ? [] : copied(current.encode([samples]));
    },
    async finish() {
      const current = open();
      encoder = undefined;
      return copied(current.finalize());
    },
    close() {
      // The encoder's wasm instance is its own; dropping it lets it be collected.
      encoder = undefined;
    },
  };
}
