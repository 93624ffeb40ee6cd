/**
 * Cuts bench/data/squad-retrieval.json, the retrieval set of bench/file-search.ts, out of SQuAD's dev sets (see
 * bench/data/README.md for where the copies come from and their licence):
 *
 *   npx tsx bench/data/squad-subset.ts <SQuAD JSON file>…
 *
 * Each file is a SQuAD v1.1 or v2.0 JSON file (`{ data: [{ title, paragraphs: [{ context, qas }] }] }`); together they
 * must hold every article of {@link ARTICLES}. Every paragraph of those articles is kept, in order; of their
 * answerable questions (`is_impossible` absent or false), the {@link QUESTIONS_PER_ARTICLE} of each article whose ids
 * come first by SHA-256 — a fixed draw that any copy of the same articles repeats. The same sources give the same file,
 * byte for byte (formatted as the repository's prettier formats JSON).
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** SQuAD's dev articles the set takes, in this order: every one in SQuAD 1.1's dev set (its first and six others). */
export const ARTICLES = [
  'Super_Bowl_50',
  'Normans',
  'Computational_complexity_theory',
  'Southern_California',
  'Sky_(United_Kingdom)',
  'Victoria_(Australia)',
  'Rhine',
] as const;

/** Questions drawn from each article: 43 × 7 = 301. */
export const QUESTIONS_PER_ARTICLE = 43;

interface SquadFile {
  version?: string;
  data: {
    title: string;
    paragraphs: {
      context: string;
      qas: { id: string; question: string; answers: { text: string }[]; is_impossible?: boolean }[];
    }[];
  }[];
}

export interface RetrievalSet {
  source: string;
  licence: string;
  articles: { title: string; from: string; paragraphs: string[] }[];
  /** Each question, the paragraph that answers it (its article's index and the paragraph's), and its first answer. */
  questions: { id: string; question: string; article: number; paragraph: number; answer: string }[];
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export function cutRetrievalSet(sources: SquadFile[]): RetrievalSet {
  const articles: RetrievalSet['articles'] = [];
  const questions: RetrievalSet['questions'] = [];
  for (const [index, title] of ARTICLES.entries()) {
    const from = sources.find((source) => source.data.some((article) => article.title === title));
    if (!from) throw new Error(`No source holds the article ${title}.`);
    const article = from.data.find((a) => a.title === title)!;
    articles.push({
      title,
      from: `SQuAD ${(from.version ?? '1.1').replace(/^v/, '')} dev`,
      paragraphs: article.paragraphs.map((p) => p.context),
    });
    const answerable = article.paragraphs.flatMap((p, paragraph) =>
      p.qas
        .filter((qa) => !qa.is_impossible && qa.answers.length > 0)
        .map((qa) => ({
          id: qa.id,
          question: qa.question.trim(),
          article: index,
          paragraph,
          answer: qa.answers[0]!.text,
        })),
    );
    answerable.sort((a, b) => (sha256(a.id) < sha256(b.id) ? -1 : 1));
    const drawn = answerable.slice(0, QUESTIONS_PER_ARTICLE);
    // In the article's order, as a reader meets them.
    drawn.sort((a, b) => a.paragraph - b.paragraph || (a.id < b.id ? -1 : 1));
    questions.push(...drawn);
  }
  return {
    source:
      'SQuAD (Rajpurkar et al., 2016 and 2018), https://rajpurkar.github.io/SQuAD-explorer/: every paragraph of ' +
      `${ARTICLES.length} articles of its dev sets, and ${QUESTIONS_PER_ARTICLE} answerable questions of each ` +
      '(bench/data/README.md)',
    licence: 'CC BY-SA 4.0',
    articles,
    questions,
  };
}

export const RETRIEVAL_SET = fileURLToPath(new URL('./squad-retrieval.json', import.meta.url));

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const paths = process.argv.slice(2);
  if (paths.length === 0) throw new Error('Usage: tsx bench/data/squad-subset.ts <SQuAD JSON file>…');
  const sources = paths.map((path) => JSON.parse(readFileSync(path, 'utf8')) as SquadFile);
  const set = cutRetrievalSet(sources);
  const prettier = await import('prettier');
  const options = (await prettier.resolveConfig(RETRIEVAL_SET)) ?? {};
  writeFileSync(RETRIEVAL_SET, await prettier.format(JSON.stringify(set), { ...options, parser: 'json' }));
  const paragraphs = set.articles.reduce((n, a) => n + a.paragraphs.length, 0);
  console.log(
    `${RETRIEVAL_SET}: ${set.articles.length} articles, ${paragraphs} paragraphs, ${set.questions.length} questions`,
  );
}
