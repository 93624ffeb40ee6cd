/**
 * How text becomes terms for the full-text index: the same folding and stemming for chunks and queries, so that
 * "Café", "cafe" and "CAFES" are one term, and stop words taken out of queries only.
 *
 * Stop words stay in the index, and leave only the query: "what is the warranty" then ranks by "warranty" rather
 * than by "the", yet the list can change without re-indexing a single stored store (a snapshot holds the terms of its
 * chunks; see {@link TEXT_ANALYSIS_VERSION}).
 */

/**
 * The version of the analysis below. A full-text snapshot records it, and one made by another version is not loaded
 * but rebuilt from its chunks, since its terms were made differently: bump it whenever {@link foldText},
 * {@link tokenize} or {@link stem} change what they make (the stop list is query-side and needs no bump).
 */
export const TEXT_ANALYSIS_VERSION = 1;

/**
 * Letters that Unicode does not decompose into a base letter and a mark, written as a reader of English would type
 * them: a search for "Malmo" or "strasse" finds "Malmö" and "Straße".
 */
const UNDECOMPOSED: Readonly<Record<string, string>> = {
  ß: 'ss',
  æ: 'ae',
  œ: 'oe',
  ø: 'o',
  ł: 'l',
  đ: 'd',
  ð: 'd',
  þ: 'th',
  ı: 'i',
};
const UNDECOMPOSED_PATTERN = /[ßæœøłđðþı]/g;

/**
 * Lower case without diacritics. Compatibility decomposition (NFKD) also makes ligatures ("ﬁ") and full-width
 * digits plain, as PDF text is full of them.
 */
export function foldText(text: string): string {
  return text
    .toLowerCase()
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .replace(UNDECOMPOSED_PATTERN, (letter) => UNDECOMPOSED[letter]!);
}

/**
 * Splits folded text into runs of letters and digits. A part number such as "XR-7734" becomes "xr" and "7734", in
 * the chunk and in the query alike, so it still matches as the pair of rare terms it is.
 */
export function tokenize(text: string): string[] {
  return foldText(text)
    .split(/[^\p{L}\p{N}]+/u)
    .filter((term) => term.length > 0);
}

/**
 * Harman's "S" stemmer (1991): English plurals to singular, and nothing else. It is the lightest stemmer that still
 * matches "refunds" with "refund" and "policies" with "policy"; stronger ones (Porter) also merge words that differ in
 * meaning ("university", "universe") and mangle names and codes, which are what full text is there to find.
 */
export function stem(term: string): string {
  if (term.length < 4 || /\d/.test(term)) return term;
  if (term.endsWith('ies') && !term.endsWith('eies') && !term.endsWith('aies')) return `${term.slice(0, -3)}y`;
  if (term.endsWith('es') && !term.endsWith('aes') && !term.endsWith('ees') && !term.endsWith('oes')) {
    return term.slice(0, -1);
  }
  if (term.endsWith('s') && !term.endsWith('us') && !term.endsWith('ss')) return term.slice(0, -1);
  return term;
}

/**
 * Words that carry no topic, dropped from queries. Short on purpose: a word like "us" stays, since it is also a
 * region, and so do negations. Written folded, as {@link tokenize} yields them.
 */
export const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'a about after all also am an and any are as at be because been before being between both but by can could did ' +
    'do does doing during each few for from further had has have having he her here hers herself him himself his how ' +
    'i if in into is it its itself just me more most my myself of off on once only or other our ours ourselves out ' +
    'over own same she should so some such than that the their theirs them themselves then there these they this ' +
    'those through to too under until up very was we were what when where which while who whom why will with would ' +
    'you your yours yourself yourselves s t'
  ).split(' '),
);

/** A chunk's term as the index keeps it. */
export function indexTerm(term: string): string {
  return stem(term);
}

/** A query's term as the search looks it up: none for a stop word. */
export function queryTerm(term: string): string | null {
  return STOP_WORDS.has(term) ? null : stem(term);
}
