/**
 * Word error rate, as speech recognition is scored: the words substituted, deleted and inserted to turn the
 * hypothesis into the reference (a word-level Levenshtein distance), over the reference's words. Both are compared
 * in lower case without punctuation, as Whisper's evaluations normalise English.
 */
export function wordErrors(reference: string, hypothesis: string): { errors: number; words: number } {
  const ref = normalizedWords(reference);
  const hyp = normalizedWords(hypothesis);
  let previous = Array.from({ length: hyp.length + 1 }, (_, j) => j);
  for (let i = 1; i <= ref.length; i++) {
    const row = [i];
    for (let j = 1; j <= hyp.length; j++) {
      const substitution = previous[j - 1]! + (ref[i - 1] === hyp[j - 1] ? 0 : 1);
      row.push(Math.min(substitution, previous[j]! + 1, row[j - 1]! + 1));
    }
    previous = row;
  }
  return { errors: previous[hyp.length]!, words: ref.length };
}

export function normalizedWords(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s']/gu, ' ')
    .split(/\s+/)
    .filter(Boolean);
}

/**
 * The word errors one clip's transcript may hold: a quarter of its words, at least one. The fixture's accuracy is
 * checked as a rate over all the held-out clips (at most 10%); a single clip's check shows that the words came
 * through the path under test (a broken path gets nearly every word wrong), without failing on the one or two words
 * a 1.4M-parameter model misses on a voice it never heard.
 */
export const clipAllowance = (reference: string): number =>
  Math.max(1, Math.floor(normalizedWords(reference).length / 4));

/**
 * The words said that a transcript lacks, in order: the reference's length less its longest common subsequence with
 * the transcript. Unlike the error rate, words the model added (a phrase heard twice in lossy audio) do not count.
 */
export function missedWords(reference: string, hypothesis: string): number {
  const ref = normalizedWords(reference);
  const hyp = normalizedWords(hypothesis);
  let previous = new Array<number>(hyp.length + 1).fill(0);
  for (let i = 1; i <= ref.length; i++) {
    const row = [0];
    for (let j = 1; j <= hyp.length; j++) {
      row.push(ref[i - 1] === hyp[j - 1] ? previous[j - 1]! + 1 : Math.max(previous[j]!, row[j - 1]!));
    }
    previous = row;
  }
  return ref.length - previous[hyp.length]!;
}
