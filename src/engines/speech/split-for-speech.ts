/** A piece of the input said in one pass of a speech model, and where it ends in the input (for progress). */
export interface SpeechPiece {
  text: string;
  /** The index in the input just after the piece. */
  end: number;
}

/** Where a sentence too long for one pass is cut first: after a clause's punctuation, then between words. */
const CLAUSE_END = /(?<=[,;:\u2014\u2013\u3001\uff0c\uff1b\uff1a])\s*/u;

/**
 * Cuts text into the pieces a speech model says one pass at a time: its sentences (`Intl.Segmenter`, which knows
 * abbreviations and other scripts' full stops), and a sentence the model cannot say in one pass (`fits` is false) at
 * its clauses, then between words. A pass per sentence is what lets the first sentence's audio go out before the rest
 * is synthesised, and keeps each pass within a model's input (Kokoro reads at most 510 phonemes).
 *
 * @example
 * splitForSpeech('Hello there. How are you?', (t) => t.length < 100);
 * // [{ text: 'Hello there.', end: 13 }, { text: 'How are you?', end: 25 }]
 */
export function splitForSpeech(text: string, fits: (piece: string) => boolean, locale = 'en'): SpeechPiece[] {
  const pieces: SpeechPiece[] = [];
  const segmenter = new Intl.Segmenter(locale, { granularity: 'sentence' });
  for (const { segment, index } of segmenter.segment(text)) {
    const sentence = segment.trim();
    if (!/[\p{L}\p{N}]/u.test(sentence)) continue; // punctuation or space alone says nothing
    const end = index + segment.trimEnd().length;
    if (fits(sentence)) pieces.push({ text: sentence, end });
    else pieces.push(...cutToFit(sentence, fits, end - sentence.length));
  }
  return pieces;
}

/** A sentence too long for one pass, as the fewest pieces that fit: clauses packed together, then words. */
function cutToFit(sentence: string, fits: (piece: string) => boolean, start: number): SpeechPiece[] {
  // Each clause (or, where a clause is too long, each word) with where it ends in the sentence.
  const units: SpeechPiece[] = [];
  let position = 0;
  for (const clause of sentence.split(CLAUSE_END)) {
    const at = sentence.indexOf(clause, position);
    position = at + clause.length;
    if (!clause) continue;
    if (fits(clause)) units.push({ text: clause, end: position });
    else
      for (const word of clause.matchAll(/\S+/g)) units.push({ text: word[0], end: at + word.index + word[0].length });
  }
  const pieces: SpeechPiece[] = [];
  for (const unit of units) {
    const last = pieces.at(-1);
    const joined = last && `${last.text} ${unit.text}`;
    if (last && fits(joined!)) pieces[pieces.length - 1] = { text: joined!, end: unit.end };
    else pieces.push(unit);
  }
  // A single word longer than a pass (a run of digits, a long URL) is said in parts of characters.
  return pieces
    .map((piece) => ({ ...piece, end: start + piece.end }))
    .flatMap((piece) => (fits(piece.text) ? [piece] : byCharacters(piece, fits)));
}

function byCharacters(piece: SpeechPiece, fits: (piece: string) => boolean): SpeechPiece[] {
  const parts: SpeechPiece[] = [];
  let rest = piece.text;
  let start = piece.end - piece.text.length;
  while (rest) {
    let length = rest.length;
    while (length > 1 && !fits(rest.slice(0, length))) length = Math.floor(length / 2);
    parts.push({ text: rest.slice(0, length), end: start + length });
    start += length;
    rest = rest.slice(length);
  }
  return parts;
}
