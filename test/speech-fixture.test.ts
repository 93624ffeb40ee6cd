import { readFileSync } from 'node:fs';
import {
  AutoProcessor,
  AutoTokenizer,
  WhisperForConditionalGeneration,
  type AutomaticSpeechRecognitionPipeline,
  type Processor,
  type Tensor,
} from '@huggingface/transformers';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  SPEECH_CLIPS,
  SPEECH_MODEL,
  hasEspeak,
  loadSpeechPipeline,
  measure,
  measureVoices,
  readManifest,
  readWav,
  wordErrors,
} from '../scripts/fixtures/speech-wer.ts';
import { DIRECT } from './support/lantern.ts';
import { clipAllowance } from './support/word-error-rate.ts';

/**
 * The bundled speech fixture, public/models/tiny-whisper (scripts/fixtures/speech_fixture.py): transformers.js computes
 * the same log-mel features as the generator did in PyTorch, generates greedily (timestamp mode) the same tokens as
 * PyTorch did from the exported ONNX weights, and its automatic-speech-recognition pipeline transcribes the held-out
 * clips of test/fixtures/speech (phrases, voices and speeds never trained) with a word error rate of at most 10%.
 */
interface SpeechReference {
  features: {
    file: string;
    shape: number[];
    mean: number;
    max: number;
    min: number;
    points: [number, number, number][];
  };
  greedy: { file: string; prefix: number[]; tokens: number[]; text: string }[];
  /** Word errors and reference words of the generator's own greedy run over the held-out wav clips. */
  pytorch_wer: { timestamps: [number, number]; no_timestamps: [number, number] };
  /** The same over the held-out voice set (test/fixtures/speech/voices.json). */
  pytorch_voices_wer: { timestamps: [number, number]; no_timestamps: [number, number] };
}
const ref = JSON.parse(readFileSync(`${SPEECH_MODEL}/reference.json`, 'utf8')) as SpeechReference;
let processor: Processor;
let model: WhisperForConditionalGeneration;
let asr: AutomaticSpeechRecognitionPipeline;

beforeAll(async () => {
  processor = await AutoProcessor.from_pretrained(SPEECH_MODEL);
  model = (await WhisperForConditionalGeneration.from_pretrained(
    SPEECH_MODEL,
    DIRECT,
  )) as WhisperForConditionalGeneration;
  asr = await loadSpeechPipeline();
}, 60_000);

const features = async (file: string) =>
  ((await processor(readWav(`${SPEECH_CLIPS}/${file}`))) as { input_features: Tensor }).input_features;

describe('tiny-whisper', () => {
  it('computes the log-mel features the generator computed', async () => {
    const f = await features(ref.features.file);
    expect(f.dims).toEqual([1, ...ref.features.shape]);
    const data = f.data as Float32Array;
    const frames = ref.features.shape[1]!;
    for (const [mel, frame, value] of ref.features.points) {
      expect(data[mel * frames + frame]).toBeCloseTo(value, 3);
    }
    expect(f.mean().item()).toBeCloseTo(ref.features.mean, 3);
    expect(f.max().item()).toBeCloseTo(ref.features.max, 3);
  });

  it('has Whisper token layout: timestamps after <|notimestamps|>, text below <|endoftext|>', async () => {
    const tokenizer = await AutoTokenizer.from_pretrained(SPEECH_MODEL);
    const id = (t: string) => tokenizer.convert_tokens_to_ids(t);
    const config = model.config as unknown as { vocab_size: number };
    expect(id('<|0.00|>')).toBe(id('<|notimestamps|>') + 1);
    expect(id('<|10.00|>')).toBe(config.vocab_size - 1);
    expect(tokenizer.encode(' Seven three nine.').every((t) => t < id('<|endoftext|>'))).toBe(true);
  });

  for (const [i, g] of ref.greedy.entries()) {
    it(`generates PyTorch's greedy tokens for ${g.file} (timestamp mode)`, async () => {
      const out = (await model.generate({
        inputs: await features(g.file),
        return_timestamps: true,
        language: 'en',
        task: 'transcribe',
      } as Parameters<typeof model.generate>[0])) as Tensor;
      expect((out.tolist() as bigint[][])[0]!.map(Number), `reference ${i}`).toEqual(g.tokens);
    });
  }

  it('the generator measured a held-out WER of at most 10% in PyTorch, with timestamps and without', () => {
    for (const [errors, words] of [ref.pytorch_wer.timestamps, ref.pytorch_wer.no_timestamps]) {
      expect(errors).toBeLessThanOrEqual(0.1 * words);
    }
  });

  // The generator's measure: every clip of one window (long.wav is the pipeline's chunking, checked apart).
  const windowClips = () => readManifest().filter((c) => c.file !== 'long.wav');

  it('transcribes the held-out clips with timestamps (WER ≤ 10%)', async () => {
    const { wer, results } = await measure(asr, true, windowClips());
    expect(results.length).toBeGreaterThan(15);
    expect(wer, JSON.stringify(results.filter((r) => r.errors))).toBeLessThanOrEqual(0.1);
  }, 30_000);

  it('transcribes the held-out clips without timestamps (WER ≤ 10%)', async () => {
    const { wer, results } = await measure(asr, false, windowClips());
    expect(wer, JSON.stringify(results.filter((r) => r.errors))).toBeLessThanOrEqual(0.1);
  }, 30_000);

  it("transcribes long audio in the pipeline's overlapping chunks", async () => {
    const long = readManifest().filter((c) => c.file === 'long.wav');
    for (const timestamps of [true, false]) {
      const [result] = (await measure(asr, timestamps, long)).results;
      // The chunks' overlaps are merged by the timestamps' token positions, which a model this small places loosely.
      expect(result!.errors, result!.text).toBeLessThanOrEqual(clipAllowance(result!.expected));
    }
  }, 30_000);

  it('returns segments and word timestamps', async () => {
    const clip = readManifest().find((c) => c.file === 'two-phrases.wav')!;
    const audio = readWav(`${SPEECH_CLIPS}/${clip.file}`);
    const segments = (await asr(audio, { return_timestamps: true, language: 'en' })) as {
      text: string;
      chunks: { timestamp: [number, number]; text: string }[];
    };
    expect(segments.chunks.length).toBe(2);
    expect(segments.chunks[0]!.timestamp[0]).toBeLessThan(segments.chunks[1]!.timestamp[0]);
    const words = (await asr(audio, { return_timestamps: 'word', language: 'en' })) as {
      text: string;
      chunks: { timestamp: [number, number]; text: string }[];
    };
    expect(wordErrors(clip.text, words.chunks.map((c) => c.text).join('')).errors).toBeLessThanOrEqual(
      clipAllowance(clip.text),
    );
    for (const w of words.chunks) expect(w.timestamp[0]).toBeLessThanOrEqual(w.timestamp[1]);
  });

  it('gives no text for silence', async () => {
    const audio = readWav(`${SPEECH_CLIPS}/silence.wav`);
    expect(((await asr(audio, { return_timestamps: true, language: 'en' })) as { text: string }).text.trim()).toBe('');
  });
});

/**
 * Voices it never heard (issue 48's target: a word error rate of at most 8%): test/fixtures/speech/voices.json holds
 * 60 utterances (the held-out phrases and digit strings) said by espeak-ng with variants, speeds, pitch bands and
 * pauses between words that training never drew. The clips are synthesised here, as the generator synthesised them.
 */
describe.skipIf(!hasEspeak())('tiny-whisper on voices it never heard (espeak-ng)', () => {
  it('the generator measured at most 8% in PyTorch, with timestamps and without', () => {
    for (const [errors, words] of [ref.pytorch_voices_wer.timestamps, ref.pytorch_voices_wer.no_timestamps]) {
      expect(errors).toBeLessThanOrEqual(0.08 * words);
    }
  });

  for (const returnTimestamps of [true, false]) {
    it(`transcribes the held-out voice set ${returnTimestamps ? 'with' : 'without'} timestamps (WER ≤ 8%)`, async () => {
      const { wer, results } = await measureVoices(asr, returnTimestamps);
      expect(results).toHaveLength(60);
      expect(wer, JSON.stringify(results.filter((r) => r.errors))).toBeLessThanOrEqual(0.08);
    }, 180_000);
  }
});
