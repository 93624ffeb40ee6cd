/**
 * A mediabunny `Output` driven as a stream: samples go in through an `AudioSampleSource` (WebCodecs, or whichever
 * custom encoder is registered for the codec), and the muxer's bytes come out through an `AppendOnlyStreamTarget`,
 * which refuses any format that would seek back, so nothing written is ever patched later.
 */
import { AppendOnlyStreamTarget, AudioSample, AudioSampleSource, Output, Quality } from 'mediabunny';
import type { AudioCodec, AudioEncodingConfig, OutputFormat } from 'mediabunny';
import type { AudioStreamEncoder } from './audio-stream-encoder.ts';
import { floatToPcm16 } from './pcm-stream.ts';

export interface MediabunnyStreamOptions {
  format: OutputFormat;
  codec: AudioCodec;
  sampleRate: number;
  /** Bits per second, for the lossy codecs. */
  bitrate?: number;
  /**
   * How samples are handed to the encoder: `s16` for FLAC, so that it writes 16-bit frames holding exactly the
   * samples `wav`/`pcm` would (from f32 the FLAC encoder would write 24 bits); `f32` for the lossy codecs.
   */
  sampleFormat: 'f32' | 's16';
  /** Sees each packet and its metadata before the muxer does (and may complete the metadata). */
  onEncodedPacket?: AudioEncodingConfig['onEncodedPacket'];
}

/** What mediabunny's (internal) encoder wrapper exposes of its progress; read defensively. */
interface QueuedEncoder {
  getQueueSize?: () => number;
  lastMuxerPromise?: Promise<void> | null;
}

/** A bound on waiting for the encoder (about 10 s at 1 ms a turn in Node); a stuck encoder then shows at finish. */
const MAX_DRAIN_TURNS = 10_000;

const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));

/** Starts the output and returns the stream encoder over it; the header (if the format has one) comes with the first bytes. */
export async function startMediabunnyStream(options: MediabunnyStreamOptions): Promise<AudioStreamEncoder> {
  const { format, codec, sampleRate, bitrate, sampleFormat, onEncodedPacket } = options;
  const ready: Uint8Array[] = [];
  let failure: unknown;
  const output = new Output({
    format,
    target: new AppendOnlyStreamTarget(
      new WritableStream<Uint8Array>({
        // Each chunk is a fresh array of the target's (it never reuses one), so it is kept as is.
        write: (chunk) => void ready.push(chunk),
      }),
    ),
  });
  const source = new AudioSampleSource({
    codec,
    ...(bitrate === undefined ? {} : { quality: new Quality({ bitrate }) }),
    ...(onEncodedPacket ? { onEncodedPacket } : {}),
  });
  output.addAudioTrack(source);
  await output.start();

  let written = 0;
  let state: 'open' | 'finished' | 'closed' = 'open';
  const take = () => ready.splice(0);
  const settle = async () => {
    // `add` resolves once the encoder has accepted the sample, not once it has encoded it: libFLAC and FFmpeg's AAC
    // answer from a worker, WebCodecs on later tasks. Waiting until the encoder's queue is empty (mediabunny keeps
    // the count, unexported) makes this push's bytes leave with this push, not the next sentence's. The target
    // writes into the stream without waiting for it: one more macrotask lets those writes reach `ready`.
    const encoder = (source as unknown as { _encoder?: QueuedEncoder })._encoder;
    for (let turns = 0; turns < MAX_DRAIN_TURNS && (encoder?.getQueueSize?.() ?? 0) > 0; turns++) await nextTask();
    await encoder?.lastMuxerPromise;
    await nextTask();
    if (failure !== undefined) throw failure;
  };
  const assertOpen = () => {
    if (state !== 'open') throw new Error(`The ${codec} encoder is already ${state}.`);
  };

  return {
    async push(samples) {
      assertOpen();
      if (samples.length === 0) return take();
      const data = sampleFormat === 's16' ? floatToPcm16(samples) : samples.slice();
      const sample = new AudioSample({
        data,
        format: sampleFormat,
        numberOfChannels: 1,
        sampleRate,
        timestamp: written / sampleRate,
      });
      written += samples.length;
      try {
        await source.add(sample);
      } catch (error) {
        failure = error;
      } finally {
        sample.close();
      }
      await settle();
      return take();
    },
    async finish() {
      assertOpen();
      state = 'finished';
      if (written === 0) {
        // Some muxers (ADTS) cannot finalize a stream without packets; an empty input answers no bytes.
        await output.cancel();
        return take();
      }
      source.close();
      await output.finalize();
      await settle();
      return take();
    },
    close() {
      if (state === 'open') void output.cancel().catch(() => undefined);
      state = 'closed';
    },
  };
}
