/**
 * English text to the phoneme string Kokoro-82M (and Lantern's tiny-speech fixture, trained on the same symbols) reads:
 * IPA characters of Kokoro's vocabulary, stress marks before the stressed vowel, punctuation kept, a space between
 * words. The grapheme-to-phoneme step is the MIT package `phonemize` (a rule and lexicon G2P, English data only), not
 * eSpeak: eSpeak is GPL, and Lantern's package must stay MIT.
 *
 * `phonemize` writes American IPA of its own (`həˈɫoʊ wɝɫd`); Kokoro was trained on misaki's symbols, where a diphthong
 * is one letter (`A` eɪ, `I` aɪ, `O` oʊ, `W` aʊ, `Y` ɔɪ; `Q` əʊ in British English), affricates are `ʤ`/`ʧ`, r-coloured
 * vowels are spelled out (`ɜɹ`, `əɹ`) and the stress mark stands before the vowel (`kˈOkəɹO`). `KOKORO_REWRITES` maps
 * one onto the other; anything left outside `KOKORO_VOCAB` is dropped, as Kokoro's tokenizer would drop it.
 *
 * Loading: `phonemize`'s ES build imports JSON without import attributes, which Vite and Vitest accept and plain Node
 * (tsx, the published `dist/`) refuses (`ERR_IMPORT_ASSERTION_TYPE_MISSING`). So in Node its CommonJS build is loaded
 * through `createRequire`, and elsewhere (a bundled worker, a page) its ES build by `import()`, which a bundler splits
 * into a chunk of its own (3.9 MB minified, 1.24 MB gzipped: 2.9 MB of it the English lexicon, 0.87 MB phonemize's
 * anyascii table, which its core imports whatever the language). Both happen once, at module load (top-level await):
 * import this module lazily from the speech path, not from code every task runs.
 */

import { EngineError } from '../../engine-interface/index.ts';

type Phonemize = (text: string, language?: string) => string;

const loadPhonemize = async (): Promise<Phonemize> => {
  const nodeModule = globalThis.process?.getBuiltinModule?.('node:module');
  if (nodeModule) return (nodeModule.createRequire(import.meta.url)('phonemize') as { phonemize: Phonemize }).phonemize;
  return (await import('phonemize')).phonemize as Phonemize;
};

const phonemize = await loadPhonemize();

/**
 * Kokoro-82M's vocabulary (hexgrad/Kokoro-82M config.json `vocab`, the same table onnx-community's tokenizer.json
 * holds), symbol → token id. Id 0 (`$`) is the pad, BOS and EOS token the tokenizer adds at both ends.
 */
// prettier-ignore
export const KOKORO_VOCAB: Readonly<Record<string, number>> = Object.freeze({
  ';': 1, ':': 2, ',': 3, '.': 4, '!': 5, '?': 6, '—': 9, '…': 10, '"': 11, '(': 12, ')': 13, '“': 14, '”': 15,
  ' ': 16, '\u0303': 17, 'ʣ': 18, 'ʥ': 19, 'ʦ': 20, 'ʨ': 21, 'ᵝ': 22, '\uAB67': 23, A: 24, I: 25, O: 31, Q: 33, S: 35,
  T: 36, W: 39, Y: 41, 'ᵊ': 42, a: 43, b: 44, c: 45, d: 46, e: 47, f: 48, h: 50, i: 51, j: 52, k: 53, l: 54, m: 55,
  n: 56, o: 57, p: 58, q: 59, r: 60, s: 61, t: 62, u: 63, v: 64, w: 65, x: 66, y: 67, z: 68, 'ɑ': 69, 'ɐ': 70,
  'ɒ': 71, 'æ': 72, 'β': 75, 'ɔ': 76, 'ɕ': 77, 'ç': 78, 'ɖ': 80, 'ð': 81, 'ʤ': 82, 'ə': 83, 'ɚ': 85, 'ɛ': 86, 'ɜ': 87,
  'ɟ': 90, 'ɡ': 92, 'ɥ': 99, 'ɨ': 101, 'ɪ': 102, 'ʝ': 103, 'ɯ': 110, 'ɰ': 111, 'ŋ': 112, 'ɳ': 113, 'ɲ': 114,
  'ɴ': 115, 'ø': 116, 'ɸ': 118, 'θ': 119, 'œ': 120, 'ɹ': 123, 'ɾ': 125, 'ɻ': 126, 'ʁ': 128, 'ɽ': 129, 'ʂ': 130,
  'ʃ': 131, 'ʈ': 132, 'ʧ': 133, 'ʊ': 135, 'ʋ': 136, 'ʌ': 138, 'ɣ': 139, 'ɤ': 140, 'χ': 142, 'ʎ': 143, 'ʒ': 147,
  'ʔ': 148, 'ˈ': 156, 'ˌ': 157, 'ː': 158, 'ʰ': 162, 'ʲ': 164, '↓': 169, '→': 171, '↗': 172, '↘': 173, 'ᵻ': 177,
});

export type Dialect = 'en-us' | 'en-gb';

/**
 * `phonemize`'s symbols → Kokoro's, applied in order (longer sequences first). kokoro-js itself rewrites `r`→`ɹ`,
 * `x`→`k`, `ʲ`→`j` and `ɬ`→`l` after eSpeak; the rest follows misaki's spelling, which Kokoro was trained on.
 */
export const KOKORO_REWRITES: Readonly<Record<Dialect, readonly (readonly [string, string])[]>> = (() => {
  const shared: [string, string][] = [
    ['dʒ', 'ʤ'],
    ['tʃ', 'ʧ'],
    ['eɪ', 'A'],
    ['aɪ', 'I'],
    ['aʊ', 'W'],
    ['ɔɪ', 'Y'],
    ['ɝ', 'ɜɹ'], // phonemize's r-coloured NURSE vowel; misaki writes ɜɹ (American) — British drops the ɹ below
    ['ɚ', 'əɹ'],
    ['ɫ', 'l'], // dark l: Kokoro has one l
    ['ɬ', 'l'],
    ['r', 'ɹ'],
    ['x', 'k'],
    ['ʲ', 'j'],
    ['g', 'ɡ'], // ASCII g → IPA script g (U+0261), the only g in the vocabulary
  ];
  return {
    'en-us': [...shared, ['oʊ', 'O']],
    'en-gb': [['ɜːɹ', 'ɜː'], ...shared, ['əʊ', 'Q'], ['oʊ', 'Q'], ['ɜɹ', 'ɜː']],
  };
})();

/** A vowel symbol (after rewriting): where a stress mark belongs, in front of it. */
const VOWELS = 'aeiouæɑɐɒɔəɛɜɪʊʌɚᵻᵊAIOQWY';
// A stress mark and the consonants after it, up to the vowel it stresses (phonemize marks the syllable, misaki and
// eSpeak the vowel: ˈskaɪ → skˈI).
const STRESS_BEFORE_ONSET = new RegExp(`([ˈˌ])([^${VOWELS}ˈˌ\\s.,!?;:—…"()“”]+)(?=[${VOWELS}])`, 'gu');

/**
 * The longest run of digits read as one number (a quadrillion less one); a longer run is read digit by digit, as
 * people read a long code. phonemize spells a number out recursively: 400 digits overflowed its stack (issue 63).
 */
const NUMBER_DIGITS = 15;
/**
 * The longest run of other characters read as one word (English's longest in dictionaries is 45 letters); a longer
 * run is read in pieces of {@link WORD_PIECE}. phonemize's rules take time in the square of a word's length: 4,096
 * letters took 34 s of the engine's thread (issue 63).
 */
const WORD_CHARS = 48;
const WORD_PIECE = 24;
const LONG_NUMBER = new RegExp(`\\d{${NUMBER_DIGITS + 1},}`, 'g');
const LONG_WORD = new RegExp(`[^\\s\\d]{${WORD_CHARS + 1},}`, 'gu');
const WORD_PIECES = new RegExp(`[^]{1,${WORD_PIECE}}`, 'gu');

/** Text as phonemize can read it in time linear in its length: long numbers and long words broken up (see above). */
export const speakableText = (text: string): string =>
  text
    .replace(LONG_NUMBER, (digits) => [...digits].join(' '))
    .replace(LONG_WORD, (word) => word.match(WORD_PIECES)!.join(' '));

/**
 * The Kokoro phoneme string for English text. Empty or unpronounceable text gives ''. Text phonemize cannot read is
 * the request's problem (400 on `input`), never the engine's: its thread and the other requests on it go on.
 */
export function phonemesFor(text: string, dialect: Dialect = 'en-us'): string {
  if (!text.trim()) return '';
  let out: string;
  try {
    out = phonemize(speakableText(text), dialect === 'en-gb' ? 'en-GB' : 'en-US').normalize('NFC');
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new EngineError('invalid_request', `\`input\` could not be read as English text (${why}).`, {
      param: 'input',
      cause: error,
    });
  }
  for (const [from, to] of KOKORO_REWRITES[dialect]) out = out.replaceAll(from, to);
  out = out.replace(STRESS_BEFORE_ONSET, '$2$1');
  out = [...out].filter((symbol) => symbol in KOKORO_VOCAB && symbol !== '$').join('');
  // phonemize leaves a space before some punctuation (`dɑɡz;" ˈkwoʊtɪd"(`) and doubles others; Kokoro's training text
  // has one space between words and none before , . ! ? ; :
  return out
    .replace(/\s+/g, ' ')
    .replace(/ ([,.!?;:…])/g, '$1')
    .trim();
}

/** Kokoro's token ids for a phoneme string, with the pad/BOS/EOS id 0 at both ends (what tokenizer.json produces). */
export const kokoroIds = (phonemes: string): number[] => [
  0,
  ...[...phonemes].flatMap((symbol) => (symbol in KOKORO_VOCAB ? [KOKORO_VOCAB[symbol]!] : [])),
  0,
];
