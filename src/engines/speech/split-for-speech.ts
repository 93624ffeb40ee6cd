/** A piece of the input said in one pass of a speech model, and where it ends in the input (for progress). */
export interface SpeechPiece {
  text: string;
  /** The index in the input just after the piece. */
  end: number;
}

/** A span of the input counted whole, with where it starts and ends in the input, and its tokens. */
interface Unit extends SpeechPiece {
  start: number;
  tokens: number;
}

/**
 * The longest span whose tokens are counted whole. Counting is phonemizing, which takes a good part of a millisecond
 * a character and more on long spans (a 4,096-character sentence took 1.2 s, issue 63); a longer span is cut before it
 * is counted, so that making one piece costs a bounded time, however long the text.
 */
const COUNTED_CHARS = 512;

/** A cut of a span: each part's text, and where it starts in the span. */
type Cut = (span: string) => { text: string; index: number }[];

const matches =
  (pattern: RegExp): Cut =>
  (span) =>
    [...span.matchAll(pattern)].map((m) => ({ text: m[0], index: m.index }));

/** Where a span too long for one pass is cut, in turn: its clauses, its words, parts of a word, halves of a part. */
const CUTS: readonly Cut[] = [
  // After a clause's punctuation (the punctuation stays with its clause).
  matches(/[^,;:\u2014\u2013\u3001\uff0c\uff1b\uff1a]*[,;:\u2014\u2013\u3001\uff0c\uff1b\uff1a]+|.+/gsu),
  matches(/\S+/g),
  // A word longer than a pass (a run of digits, a long URL), in parts of 24 characters as phonemesFor reads it.
  matches(/[^]{1,24}/gu),
  (span) => {
    const half = [...span].slice(0, Math.ceil([...span].length / 2)).join('');
    return [
      { text: half, index: 0 },
      { text: span.slice(half.length), index: half.length },
    ];
  },
];

/**
 * Cuts text into the pieces a speech model says one pass at a time: its sentences (`Intl.Segmenter`, which knows
 * abbreviations and other scripts' full stops), and a sentence of more than `budget` tokens at its clauses, then
 * between words, packed together as far as they fit. A pass per sentence is what lets the first sentence's audio go
 * out before the rest is synthesised; the budget keeps each pass within a model's input (Kokoro reads at most 510
 * phonemes) and its audio short (a pass's time and memory grow with the audio it makes).
 *
 * Lazy: each piece is cut, and its spans counted, only when it is asked for, so the caller spreads the counting over
 * its turns as it says the pieces; and no span longer than {@link COUNTED_CHARS} is counted whole. A packed piece's
 * tokens are its spans' tokens and a space between each (phonemes are written word by word): an estimate, which the
 * caller's budget leaves room for (at most 200 phonemes a pass, of Kokoro's 510).
 *
 * @example
 * [...splitForSpeech('Hello there. How are you?', (t) => t.length, 100)];
 * // [{ text: 'Hello there.', end: 12 }, { text: 'How are you?', end: 25 }]
 */
export function* splitForSpeech(
  text: string,
  count: (piece: string) => number,
  budget: number,
  locale = 'en',
): Generator<SpeechPiece, void, undefined> {
  const segmenter = new Intl.Segmenter(locale, { granularity: 'sentence' });
  for (const { segment, index } of segmenter.segment(text)) {
    const sentence = segment.trim();
    if (!hasSomethingToSay(sentence)) continue; // punctuation or space alone says nothing
    let piece: Unit | undefined;
    for (const unit of units(sentence, index + segment.indexOf(sentence), 0, count, budget)) {
      const gap = piece && text.slice(piece.end, unit.start) ? ' ' : '';
      if (piece && piece.tokens + gap.length + unit.tokens <= budget) {
        piece = {
          ...piece,
          text: piece.text + gap + unit.text,
          end: unit.end,
          tokens: piece.tokens + gap.length + unit.tokens,
        };
        continue;
      }
      if (piece) yield { text: piece.text, end: piece.end };
      piece = unit;
    }
    if (piece) yield { text: piece.text, end: piece.end };
  }
}

/** Whether text holds anything a voice says: a letter or a digit. */
export const hasSomethingToSay = (text: string): boolean => /[\p{L}\p{N}]/u.test(text);

/**
 * The spans of `span` (at `start` in the input) that fit the budget each: the span itself when it does, else those
 * of each of its cuts at `level` and after. A single character is said as it is, whatever it counts.
 */
function* units(
  span: string,
  start: number,
  level: number,
  count: (piece: string) => number,
  budget: number,
  known?: number,
): Generator<Unit, void, undefined> {
  if (span.length <= COUNTED_CHARS) {
    const tokens = known ?? count(span);
    if (tokens <= budget || [...span].length === 1) {
      yield { text: span, start, end: start + span.length, tokens };
      return;
    }
    known = tokens;
  }
  const parts = CUTS[level]!(span).flatMap((part) => {
    const text = part.text.trim();
    return text ? [{ text, start: start + part.index + part.text.indexOf(text) }] : [];
  });
  // Halves are halved again until they fit.
  const next = Math.min(level + 1, CUTS.length - 1);
  // A cut that leaves the span whole (a clause without punctuation, a single word) passes on what is known of it.
  if (parts.length === 1 && parts[0]!.text === span) {
    yield* units(span, start, next, count, budget, known);
    return;
  }
  for (const part of parts) yield* units(part.text, part.start, next, count, budget);
}
