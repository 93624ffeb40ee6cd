import { Tensor } from '@huggingface/transformers';
import { describe, expect, it } from 'vitest';
import { EarlierText, WhisperScoreRecorder, TranscriptRules } from './speech-model.ts';

/**
 * The decoding rules Lantern adds to transformers.js' Whisper generate(), on hand-made scores: Whisper's layout of a
 * vocabulary (text, the end token, special tokens, then timestamps), here 10 text tokens, the end at 10, specials
 * 11–14 and timestamps from 15.
 */
const EOT = 10;
const TS = 15;
const VOCAB = 25;
const scoresOf = (values: number[]) => new Tensor('float32', Float32Array.from(values), [1, values.length]);
const row = (logits: Tensor) => (logits as unknown as Tensor[])[0]!.data as Float32Array;
const ids = (tokens: number[]) => [tokens.map(BigInt)];

describe('TranscriptRules', () => {
  const rules = new TranscriptRules({ eot: EOT, timestampBegin: TS, suppress: [3], beginIndex: 2 });
  const flat = () => scoresOf(Array.from({ length: VOCAB }, () => 0));

  it("suppresses every special token (a language, the task, no speech…) and the model's suppress_tokens", () => {
    const scores = row(rules._call(ids([11, 12, 16, 4]), flat()));
    for (let t = EOT + 1; t < TS; t++) expect(scores[t]).toBe(-Infinity);
    expect(scores[3]).toBe(-Infinity);
    expect(scores[EOT]).toBe(0); // the end stays possible
    expect(scores[4]).toBe(0);
  });

  it('timestamps never go back: after a start, only later ones; after an end, that end again or later', () => {
    const afterText = row(rules._call(ids([11, 12, TS + 3, 4]), flat())); // <|start|> text: the end comes after it
    expect([...afterText.slice(TS, TS + 4)]).toEqual([-Infinity, -Infinity, -Infinity, -Infinity]);
    expect(afterText[TS + 4]).toBe(0);
    const afterEnd = row(rules._call(ids([11, 12, TS + 3, 4, TS + 6]), flat())); // an end: the next start may repeat it
    expect(afterEnd[TS + 5]).toBe(-Infinity);
    expect(afterEnd[TS + 6]).toBe(0);
    const afterPair = row(rules._call(ids([11, 12, TS + 3, 4, TS + 6, TS + 6]), flat()));
    expect(afterPair[TS + 6]).toBe(-Infinity);
  });

  it('reads only what was generated: earlier text and the start tokens are not the transcript', () => {
    const scores = row(rules._call(ids([TS + 9, 12]), flat())); // a timestamp in the prompt sets no floor
    expect(scores[TS]).toBe(0);
  });
});

describe('WhisperScoreRecorder', () => {
  const logSoftmax = (values: number[], token: number) =>
    values[token]! - Math.log(values.reduce((sum, v) => sum + Math.exp(v), 0));

  it("reads the model's own distribution when transformers.js has divided the scores by the sampling temperature", () => {
    const model = [2, 1, 0.5, -1];
    const recorder = new WhisperScoreRecorder(3, 0.5);
    recorder._call(ids([0]), scoresOf(model.map((v) => v / 0.5)));
    expect(recorder.logprobOf(0)).toBeCloseTo(logSoftmax(model, 0), 5);
    expect(recorder.noSpeechProb).toBeCloseTo(Math.exp(logSoftmax(model, 3)), 5);
  });

  it('reads the scores as later processors leave them (a suppressed token drops out of the sum)', () => {
    const recorder = new WhisperScoreRecorder(undefined, 0);
    const logits = scoresOf([1, 1, 1, 1]);
    recorder._call(ids([0]), logits);
    row(logits).fill(-Infinity, 2); // what the rules do after the recorder
    expect(recorder.logprobOf(0)).toBeCloseTo(Math.log(0.5), 5);
  });

  it('takes the no-speech probability at the first step only, before any rule suppresses the token', () => {
    const recorder = new WhisperScoreRecorder(1, 0);
    recorder._call(ids([0]), scoresOf([0, 0]));
    recorder._call(ids([0, 0]), scoresOf([0, -Infinity]));
    expect(recorder.noSpeechProb).toBeCloseTo(0.5, 5);
  });
});

describe('EarlierText', () => {
  it('is the prompt, then the transcript so far, its last `limit` tokens', () => {
    const earlier = new EarlierText([1, 2], 4);
    expect(earlier.tokens).toEqual([1, 2]);
    earlier.add([3, 4], 0);
    earlier.add([5], 0.4);
    expect(earlier.tokens).toEqual([2, 3, 4, 5]);
  });

  it("is reset, prompt and all, after a window decoded hotter than 0.5 (OpenAI's transcribe())", () => {
    const earlier = new EarlierText([1, 2], 10);
    earlier.add([3, 4], 0.6);
    expect(earlier.tokens).toEqual([]);
    earlier.add([5, 6], 0);
    expect(earlier.tokens).toEqual([5, 6]); // the windows after it read what follows
    earlier.add([7], 0.5); // 0.5 itself is not hotter
    expect(earlier.tokens).toEqual([5, 6, 7]);
  });
});
