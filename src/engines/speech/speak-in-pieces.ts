import {
  createAudioEncoder,
  encoderAvailable,
  resample,
  type LoadOptional,
  type SpeechFormat as EncodedFormat,
} from '../../audio/index.ts';
import {
  EngineError,
  type SpeakRequest,
  type SpeakResult,
  type SpeechEvent,
  type SpeechFormat,
} from '../../engine-interface/index.ts';

// The interface's formats and the encoders' are one list, written twice because neither layer imports the other.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : never) : never;
const FORMATS_AGREE: Same<SpeechFormat, EncodedFormat> = true;
void FORMATS_AGREE;
import type { SynthesisModel } from '../model-loaders.ts';
import type { TaskQueue } from '../task-queue.ts';
import { hasSomethingToSay, splitForSpeech, type SpeechPiece } from './split-for-speech.ts';
import { resolveVoice } from './voices.ts';

/** The rate of every speech answer, whatever the model's own: 24 kHz, as OpenAI's (its `pcm` is 24 kHz 16-bit mono). */
export const SPEECH_SAMPLE_RATE = 24_000;

/** Audio frames per second in a speech answer's usage (`output_tokens`): one per 25 ms, Lantern's unit. */
const FRAMES_PER_SECOND = 40;

/**
 * The most tokens (phonemes) said in one pass at speed 1, and in proportion at other speeds (12 at 0.25, 200 at 4):
 * some 3.5 s of speech (a StyleTTS 2 model says about 15 phonemes a second). A pass's time and memory grow with the
 * audio it makes, and the realm answers nothing else while it runs: onnxruntime-node runs a pass on the engine's
 * thread, and the queue hands the realm to other requests only between passes. Kokoro's whole 510 phonemes at speed
 * 0.25 were 139 s of audio in one pass of 31 s and 3.9 GB, which onnxruntime's arena then kept (issue 63); 50 are
 * under a second of tiny-speech on one core. A sentence of more is cut at its clauses, then between words.
 */
export const PASS_TOKENS = 50;

/**
 * Refuses a format this realm cannot encode (an LGPL encoder it cannot load), before any model loads: 400
 * `response_format`, saying why and which formats it can encode.
 */
export async function checkSpeechFormat(format: SpeechFormat, loadOptional?: LoadOptional): Promise<void> {
  const available = await encoderAvailable(format, { loadOptional });
  if (available !== true) throw new EngineError('invalid_request', available, { param: 'response_format' });
}

export interface SpeakOptions {
  signal?: AbortSignal | undefined;
  onEvent?: ((event: SpeechEvent) => void) | undefined;
  /** The realm's queue: each piece is one turn, so other requests' passes run between a long text's sentences. */
  queue: TaskQueue;
  loadOptional?: LoadOptional | undefined;
}

/**
 * Says a request's text a piece at a time (its sentences, cut further where one is longer than a pass says: see
 * {@link PASS_TOKENS}) and encodes each piece's audio as soon as it is said: the first sentence is heard while the rest
 * are still being synthesised. Each piece, its cutting and phonemizing too, is a turn of the realm's queue, so other
 * requests' turns run between a long text's pieces; and an abort is heard between pieces.
 */
export async function speakInPieces(
  model: SynthesisModel,
  request: SpeakRequest,
  { signal, onEvent, queue, loadOptional }: SpeakOptions,
): Promise<SpeakResult> {
  const voice = resolveVoice(model, request.voice);
  if (!hasSomethingToSay(request.input)) {
    throw new EngineError('invalid_request', '`input` has nothing to say: it holds no letters or digits.', {
      param: 'input',
    });
  }
  const encoder = await createAudioEncoder(request.format, SPEECH_SAMPLE_RATE, { loadOptional });
  // Each chunk is handed on as memory of its own, which the engine worker moves to its caller: a view into an
  // encoder's memory (a WebAssembly heap, Node's pooled buffers) is copied first.
  const send = (chunks: Uint8Array[]) => {
    for (const chunk of chunks) {
      if (chunk.byteLength === 0) continue;
      const whole = chunk.byteOffset === 0 && chunk.byteLength === chunk.buffer.byteLength;
      onEvent?.({ type: 'audio', bytes: whole ? chunk : chunk.slice() });
    }
  };
  const budget = Math.max(1, Math.min(model.maxInputTokens, Math.floor(PASS_TOKENS * request.speed)));
  const pieces = splitForSpeech(request.input, (text) => model.tokenCount(text, voice), budget);
  // The next piece is cut (its spans phonemized) in the turn that says it.
  const sayNext = async (): Promise<{ piece: SpeechPiece; samples: Float32Array; inputTokens: number } | undefined> => {
    const next = pieces.next();
    if (next.done) return undefined;
    return { piece: next.value, ...(await model.synthesize(next.value.text, voice, request.speed)) };
  };
  try {
    let samples = 0;
    let inputTokens = 0;
    for (;;) {
      const spoken = await queue.run(sayNext, signal);
      if (!spoken) break;
      const { piece } = spoken;
      const audio = resample(spoken.samples, model.sampleRate, SPEECH_SAMPLE_RATE);
      samples += audio.length;
      inputTokens += spoken.inputTokens;
      send(await encoder.push(audio));
      onEvent?.({ type: 'progress', characters: piece.end, total: request.input.length });
    }
    send(await encoder.finish());
    const seconds = samples / SPEECH_SAMPLE_RATE;
    return {
      seconds,
      sampleRate: SPEECH_SAMPLE_RATE,
      usage: { inputTokens, outputTokens: Math.ceil(seconds * FRAMES_PER_SECOND) },
    };
  } finally {
    encoder.close();
  }
}
