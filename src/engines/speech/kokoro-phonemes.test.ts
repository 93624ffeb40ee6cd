import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { AutoTokenizer } from '@huggingface/transformers';
import { describe, expect, it } from 'vitest';
import { KOKORO_REWRITES, KOKORO_VOCAB, kokoroIds, phonemesFor, speakableText } from './kokoro-phonemes.ts';

// The speech fixtures' 71 words (scripts/fixtures/speech_fixture.py WORDS): everything tiny-speech can say.
const FIXTURE_WORDS = (
  'zero one two three four five six seven eight nine red blue green yellow black white brown pink cat dog fox bird ' +
  'fish horse cow bear mouse duck runs jumps sleeps eats swims sings walks reads Monday Tuesday Wednesday Thursday ' +
  'Friday Saturday Sunday big small today tomorrow now morning night door window the a and is on at open close stop ' +
  'go turn yes no hello please left right up down'
).split(' ');

const TINY_SPEECH = fileURLToPath(new URL('../../../public/models/tiny-speech', import.meta.url));

describe('phonemesFor', () => {
  it('gives every fixture word in both dialects in Kokoro symbols only', () => {
    expect(FIXTURE_WORDS).toHaveLength(71);
    for (const dialect of ['en-us', 'en-gb'] as const) {
      for (const word of FIXTURE_WORDS) {
        const phonemes = phonemesFor(word, dialect);
        expect(phonemes, word).not.toBe('');
        for (const symbol of phonemes) expect(KOKORO_VOCAB, `${word} → ${phonemes}`).toHaveProperty(symbol);
      }
    }
  });

  it("writes Kokoro's (misaki's) spelling: one-letter diphthongs, ʤ, ɜɹ, one l, stress before the vowel", () => {
    expect(phonemesFor('hello')).toBe('həlˈO');
    expect(phonemesFor('nine')).toBe('nˈIn');
    expect(phonemesFor('eight')).toBe('ˈAt');
    expect(phonemesFor('brown')).toBe('bɹˈWn');
    expect(phonemesFor('jumps')).toBe('ʤˈʌmps');
    expect(phonemesFor('bird')).toBe('bˈɜɹd');
    expect(phonemesFor('black')).toBe('blˈæk');
    expect(phonemesFor('window')).toBe('wˈɪndO');
    expect(phonemesFor('Saturday')).toBe('sˈætˌɪdˌA');
  });

  it('says British English with Q for the GOAT vowel and no r after a vowel', () => {
    expect(phonemesFor('hello', 'en-gb')).toBe('həlˈQ');
    expect(phonemesFor('bird', 'en-gb')).toBe('bˈɜːd');
    expect(phonemesFor('four', 'en-gb')).toBe('fˈɔː');
    expect(phonemesFor('four', 'en-us')).toBe('fˈɔɹ');
  });

  it('reads a run of more than 15 digits digit by digit, and a run of over 48 letters in pieces of 24', () => {
    expect(speakableText('call 1234567890123456 or 123456789012345')).toBe(
      'call 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 or 123456789012345',
    );
    expect(speakableText(`${'x'.repeat(49)} ${'y'.repeat(48)}`)).toBe(
      `${'x'.repeat(24)} ${'x'.repeat(24)} x ${'y'.repeat(48)}`,
    );
    // 400 digits overflowed phonemize's stack; 4,096 letters took 34 s (issue 63).
    expect(phonemesFor('1'.repeat(400)).split(' ')).toHaveLength(400);
    expect(phonemesFor('a'.repeat(4096)).split(' ')).toHaveLength(Math.ceil(4096 / 24));
  });

  it('phonemises sentences with a space between words and their punctuation kept', () => {
    expect(phonemesFor(' The red fox runs.')).toBe('ðə ɹɛd fɑks ɹʌnz.');
    expect(phonemesFor(' Open the window please.')).toBe('ˈOpən ðə wˈɪndO pliz.');
    expect(phonemesFor('Hello, world!')).toBe('həlˈO, wɜɹld!');
    expect(phonemesFor('Is it red? Yes; it is.')).toMatch(/^[^ ]+ [^ ]+ [^ ]+\? [^ ]+; [^ ]+ [^ ]+\.$/);
  });

  it('reads numbers as words', () => {
    expect(phonemesFor('42')).toBe('fˈɔɹti tu');
    expect(phonemesFor('42', 'en-gb')).toBe('fˈɔːti tu');
  });

  it('gives nothing for empty or blank input, and drops what Kokoro cannot say', () => {
    expect(phonemesFor('')).toBe('');
    expect(phonemesFor('   \n')).toBe('');
    const odd = phonemesFor('x-ray — “quoted” (aside)…');
    for (const symbol of odd) expect(KOKORO_VOCAB).toHaveProperty(symbol);
    expect(odd).not.toMatch(/ {2}|^ | $/);
  });

  it('maps every rewrite onto symbols of the vocabulary', () => {
    for (const rewrites of Object.values(KOKORO_REWRITES)) {
      for (const [, to] of rewrites) for (const symbol of to) expect(KOKORO_VOCAB).toHaveProperty(symbol);
    }
  });
});

describe('kokoroIds', () => {
  it("gives Kokoro's ids with the pad/BOS/EOS id 0 at both ends", () => {
    expect(kokoroIds('hˈI.')).toEqual([0, 50, 156, 25, 4, 0]);
    expect(kokoroIds('')).toEqual([0, 0]);
  });

  it.skipIf(!existsSync(`${TINY_SPEECH}/tokenizer.json`))(
    "matches what tiny-speech's tokenizer.json gives transformers.js",
    async () => {
      const tokenizer = await AutoTokenizer.from_pretrained(TINY_SPEECH);
      for (const text of [' The red fox runs.', 'Hello, world! 42 "dogs" (and) cats…', '']) {
        for (const dialect of ['en-us', 'en-gb'] as const) {
          const phonemes = phonemesFor(text, dialect);
          const ids = Array.from(tokenizer(phonemes).input_ids.data as BigInt64Array, Number);
          expect(ids, phonemes).toEqual(kokoroIds(phonemes));
        }
      }
    },
  );
});
