import { resample } from '../audio/resample.ts';

/** What the session's input buffer takes: PCM16 mono at 24 kHz. */
export const CAPTURE_RATE = 24_000;
/** Samples the worklet gathers before posting them (at the context's rate): about 40 ms, the session's VAD steps finer. */
const FRAME_SAMPLES = 1024;

/**
 * The worklet that copies the incoming track's samples to the main thread, in frames of FRAME_SAMPLES (the audio thread
 * hands it 128 at a time). From a Blob URL: the page has no file of its own to serve it, and a service worker page may
 * be offline.
 */
const WORKLET = `
class LanternCapture extends AudioWorkletProcessor {
  constructor() { super(); this.frame = new Float32Array(${FRAME_SAMPLES}); this.filled = 0; }
  process(inputs) {
    const input = inputs[0];
    const channel = input && input[0];
    if (!channel) return true;
    for (let i = 0; i < channel.length; i++) {
      let sum = 0;
      for (let c = 0; c < input.length; c++) sum += input[c][i];
      this.frame[this.filled++] = sum / input.length;
      if (this.filled === this.frame.length) {
        this.port.postMessage(this.frame, [this.frame.buffer]);
        this.frame = new Float32Array(${FRAME_SAMPLES});
        this.filled = 0;
      }
    }
    return true;
  }
}
registerProcessor('lantern-capture', LanternCapture);
`;

/**
 * Feeds a remote WebRTC track to `onSamples` as PCM16 mono at 24 kHz, through Web Audio. The context runs at 24 kHz
 * where the browser resamples a stream into it (Chromium, WebKit); where it cannot (Firefox refuses a MediaStream
 * source in a context of another rate), a context at the track's own rate and Lantern's resampler, a frame at a time.
 *
 * @returns what stops the capture.
 */
export async function captureTrack(stream: MediaStream, onSamples: (samples: Int16Array) => void): Promise<() => void> {
  // Chromium hands a remote WebRTC track to Web Audio only while a media element plays it too (crbug.com/933677):
  // a muted one, which nobody hears.
  const sink = new Audio();
  sink.muted = true;
  sink.srcObject = stream;
  void sink.play().catch(() => undefined);

  let context = new AudioContext({ sampleRate: CAPTURE_RATE });
  let source: MediaStreamAudioSourceNode;
  try {
    source = context.createMediaStreamSource(stream);
  } catch {
    void context.close();
    context = new AudioContext();
    source = context.createMediaStreamSource(stream);
  }
  const rate = context.sampleRate;
  const url = URL.createObjectURL(new Blob([WORKLET], { type: 'text/javascript' }));
  try {
    await context.audioWorklet.addModule(url);
  } finally {
    URL.revokeObjectURL(url);
  }
  // One silent output, connected: every browser renders a node the destination pulls, not all one without outputs.
  const worklet = new AudioWorkletNode(context, 'lantern-capture');
  worklet.port.onmessage = (event: MessageEvent<Float32Array>) => {
    onSamples(toPcm16(resample(event.data, rate, CAPTURE_RATE)));
  };
  source.connect(worklet);
  worklet.connect(context.destination);
  // A context made without a user's gesture starts suspended (autoplay rules); the call itself usually follows one.
  void context.resume().catch(() => undefined);
  return () => {
    worklet.port.onmessage = null;
    source.disconnect();
    worklet.disconnect();
    void context.close();
    sink.srcObject = null;
  };
}

/** Float samples in [-1, 1] (clipped beyond) as PCM16. */
export function toPcm16(samples: Float32Array): Int16Array {
  const out = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    const s = Math.max(-1, Math.min(1, samples[i]!));
    out[i] = s < 0 ? Math.round(s * 32768) : Math.round(s * 32767);
  }
  return out;
}
