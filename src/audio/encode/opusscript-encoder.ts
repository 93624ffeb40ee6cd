/**
 * libopus (BSD) from `opusscript`, as a mediabunny custom encoder: the Opus path where the realm's WebCodecs has none
 * (Node's engine thread; a browser without Opus in `AudioEncoder`). opusscript's own wrapper copies packets with
 * Node's `Buffer`, so Lantern drives its emscripten module directly: samples go into the wasm heap as s16, one 20 ms
 * frame at a time, and each packet is copied out of it.
 */
import { CustomAudioEncoder, EncodedPacket, registerEncoder } from 'mediabunny';
import type { AudioCodec, AudioSample } from 'mediabunny';

/** opusscript's emscripten module (CommonJS, without types of its own): the handler's methods Lantern calls. */
export interface OpusScriptHandler {
  /**
   * Encodes `frameSize` samples per channel into `out`; returns the packet's length, or an error below 0. `pcm` holds
   * the s16le bytes one per 16-bit slot (`pcmBytes` of them), which it packs into samples in place first.
   */
  _encode(pcm: number, pcmBytes: number, out: number, frameSize: number): number;
  /** `opus_encoder_ctl(ctl, arg)`; a GET ctl takes a pointer to an int32 in `arg`. */
  _encoder_ctl(ctl: number, arg: number): number;
}
export interface OpusNative {
  OpusScriptHandler: {
    new (sampleRate: number, channels: number, application: number): OpusScriptHandler;
    destroy_handler(handler: OpusScriptHandler): void;
  };
  _malloc(bytes: number): number;
  _free(pointer: number): void;
  HEAPU16: Uint16Array;
  HEAP32: Int32Array;
  HEAPU8: Uint8Array;
}
/** Instantiates the module; with `wasmBinary` it compiles those bytes instead of reading or fetching the file. */
export type CreateOpusNative = (module?: { wasmBinary?: ArrayBuffer | Uint8Array }) => OpusNative;

/** The rates libopus encodes at natively (other rates need resampling first). */
export const OPUS_INPUT_RATES: readonly number[] = [8000, 12_000, 16_000, 24_000, 48_000];

const OPUS_APPLICATION_AUDIO = 2049;
const OPUS_SET_BITRATE = 4002;
const OPUS_GET_LOOKAHEAD = 4027;
/** The largest Opus packet (RFC 6716: 1275 bytes per frame, up to 3 frames). */
const MAX_PACKET_BYTES = 3828;
/** The granule rate of Ogg Opus: pre-skip and positions count 48 kHz samples whatever the input rate (RFC 7845). */
const OGG_OPUS_RATE = 48_000;
/** 20 ms frames: libopus' default, and what WebCodecs uses. */
const FRAME_SECONDS = 0.02;

let native: Promise<OpusNative> | undefined;

/** opusscript's wasm module, instantiated once per realm. */
function loadOpusNative(): Promise<OpusNative> {
  native ??= (async () => {
    // @ts-expect-error -- opusscript ships no types for its emscripten module; CreateOpusNative describes it.
    const { default: createOpusNative } = (await import('opusscript/build/opusscript_native_wasm.js')) as {
      default: CreateOpusNative;
    };
    if (typeof process !== 'undefined' && process.versions?.node !== undefined) {
      return createOpusNative(); // reads the .wasm beside its script
    }
    // In a bundle the script cannot find its .wasm (it would look beside the page or worker, synchronously): hand it
    // the bytes from where the bundler put them.
    const { OPUSSCRIPT_WASM_URL } = await import('./opusscript-wasm-url.ts');
    const response = await fetch(new URL(OPUSSCRIPT_WASM_URL, import.meta.url));
    if (!response.ok) throw new Error(`The Opus encoder's WebAssembly did not load (HTTP ${response.status}).`);
    return createOpusNative({ wasmBinary: await response.arrayBuffer() });
  })();
  native.catch(() => (native = undefined));
  return native;
}

/**
 * The Ogg Opus identification header ("OpusHead", RFC 7845 §5.1) that the Ogg muxer writes as the stream's first packet:
 * mono or stereo, channel mapping family 0, and the input rate for decoders that want to give back the original rate.
 */
export function opusHead(channels: number, preSkip: number, inputSampleRate: number): Uint8Array {
  const head = new Uint8Array(19);
  const view = new DataView(head.buffer);
  head.set([0x4f, 0x70, 0x75, 0x73, 0x48, 0x65, 0x61, 0x64]); // "OpusHead"
  view.setUint8(8, 1); // version
  view.setUint8(9, channels);
  view.setUint16(10, preSkip, true);
  view.setUint32(12, inputSampleRate, true);
  view.setInt16(16, 0, true); // output gain
  view.setUint8(18, 0); // mapping family 0: mono or stereo, no table
  return head;
}

class OpusScriptEncoder extends CustomAudioEncoder {
  private module: OpusNative | undefined;
  private handler: OpusScriptHandler | undefined;
  private pcmPointer = 0;
  private packetPointer = 0;
  private frameSize = 0;
  private frame = new Int16Array(0);
  /** The same frame as bytes (little-endian, as typed arrays are on every platform Lantern runs on). */
  private frameBytes = new Uint8Array(0);
  private filled = 0;
  /** The next frame's first sample, in samples at the input rate; set by the first sample's timestamp. */
  private nextFrameAt: number | undefined;
  private description: Uint8Array | undefined;
  /** The encoder's delay in input samples: the decoder drops that much from the start as pre-skip. */
  private lookahead = 0;

  static override supports(codec: AudioCodec, config: AudioEncoderConfig): boolean {
    return codec === 'opus' && config.numberOfChannels === 1 && OPUS_INPUT_RATES.includes(config.sampleRate);
  }

  async init(): Promise<void> {
    const module = (this.module = await loadOpusNative());
    const { sampleRate } = this.config;
    this.handler = new module.OpusScriptHandler(sampleRate, 1, OPUS_APPLICATION_AUDIO);
    if (this.config.bitrate !== undefined) this.control(OPUS_SET_BITRATE, this.config.bitrate);
    this.frameSize = Math.round(sampleRate * FRAME_SECONDS);
    this.frame = new Int16Array(this.frameSize);
    this.frameBytes = new Uint8Array(this.frame.buffer);
    // Two 16-bit slots per sample (one per byte), and as many again: its packing loop reads up to twice as far.
    this.pcmPointer = module._malloc(this.frameSize * 8);
    this.packetPointer = module._malloc(MAX_PACKET_BYTES);
    const lookahead = module._malloc(4);
    try {
      this.control(OPUS_GET_LOOKAHEAD, lookahead);
      this.lookahead = module.HEAP32[lookahead >> 2]!;
      // The decoder drops the encoder's delay (pre-skip, in 48 kHz samples), so the output lines up with the input.
      this.description = opusHead(1, Math.round((this.lookahead * OGG_OPUS_RATE) / sampleRate), sampleRate);
    } finally {
      module._free(lookahead);
    }
  }

  encode(sample: AudioSample): void {
    this.nextFrameAt ??= Math.round(sample.timestamp * this.config.sampleRate);
    const samples = new Int16Array(sample.numberOfFrames);
    sample.copyTo(samples, { format: 's16', planeIndex: 0 });
    this.append(samples);
  }

  flush(): void {
    if (this.nextFrameAt === undefined) return;
    // The decoder drops `lookahead` samples from the start (pre-skip), so the last input samples come out only if as
    // many more go in after them (opusenc does the same); the last, partial frame is padded with silence, and its
    // packet's shorter duration tells the muxer where the stream really ends (the final granule position).
    this.append(new Int16Array(this.lookahead));
    if (this.filled > 0) {
      this.frame.fill(0, this.filled);
      this.encodeFrame(this.filled);
    }
  }

  private append(samples: Int16Array): void {
    let at = 0;
    while (at < samples.length) {
      const take = Math.min(this.frameSize - this.filled, samples.length - at);
      this.frame.set(samples.subarray(at, at + take), this.filled);
      this.filled += take;
      at += take;
      if (this.filled === this.frameSize) this.encodeFrame(this.frameSize);
    }
  }

  close(): void {
    const { module, handler } = this;
    if (!module || !handler) return;
    module.OpusScriptHandler.destroy_handler(handler);
    module._free(this.pcmPointer);
    module._free(this.packetPointer);
    this.handler = undefined;
  }

  private encodeFrame(samples: number): void {
    const module = this.module!;
    // opusscript's C++ takes each byte of the s16le frame in a 16-bit slot of its own (what `Uint16Array.set` of a
    // Node Buffer gives) and packs them back into samples in place. Read the heap views afresh: they are replaced
    // when the wasm memory grows.
    module.HEAPU16.set(this.frameBytes, this.pcmPointer >> 1);
    const length = this.handler!._encode(this.pcmPointer, this.frameSize * 2, this.packetPointer, this.frameSize);
    if (length < 0) throw new Error(`libopus could not encode a frame (error ${length}).`);
    const data = module.HEAPU8.slice(this.packetPointer, this.packetPointer + length);
    const { sampleRate } = this.config;
    const packet = new EncodedPacket(data, 'key', this.nextFrameAt! / sampleRate, samples / sampleRate);
    this.nextFrameAt! += this.frameSize;
    this.filled = 0;
    const description = this.description;
    this.description = undefined; // the decoder config goes with the first packet only
    this.onPacket(
      packet,
      description
        ? { decoderConfig: { codec: 'opus', sampleRate: OGG_OPUS_RATE, numberOfChannels: 1, description } }
        : undefined,
    );
  }

  private control(ctl: number, value: number): void {
    const result = this.handler!._encoder_ctl(ctl, value);
    if (result < 0) throw new Error(`libopus refused the encoder setting ${ctl} (error ${result}).`);
  }
}

/** Makes mediabunny encode Opus with libopus in this realm; only for realms whose WebCodecs cannot (it takes precedence). */
export function registerOpusScriptEncoder(): void {
  if (registered) return; // mediabunny warns on a second registration
  registerEncoder(OpusScriptEncoder);
  registered = true;
}

let registered = false;
