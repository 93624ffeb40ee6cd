import type { ChatMessage } from '../../engine-interface/index.ts';
import type { FileLibrary, SearchResult } from '../../file-search/index.ts';
import type { ConversationItem, ParsedFileSearch } from './schema.ts';
import type { FileCitation, FileSearchResult } from './wire.ts';

/**
 * `file_search` in the Responses API. OpenAI's models decide to search, and write the queries; the small models here
 * cannot be relied on to call a tool, so the search runs before the answer whenever the tool is there, for what the
 * conversation asks (see {@link turnQueries}); the passages found are given to the model as numbered sources, and the
 * answer's `output_text` cites the files it drew on.
 */

/** The passages found, in the order they are given to the model (best first), and the queries that found them. */
export interface Sources {
  queries: string[];
  results: SearchResult[];
}

/**
 * The queries of a turn's search: the last user message, and, when a user message came before it, the two together.
 * A follow-up ("and what about its population?") names nothing to find by itself; with the question before it, it
 * does. A chunk keeps its best score over the queries, so a new question that leaves the last one behind is found
 * by its own words first. Only the one message before: older turns have usually moved on.
 *
 * @example
 * turnQueries([user('What is the capital of France?'), assistant('Paris.'), user('And its population?')]);
 * // ['And its population?', 'What is the capital of France?\nAnd its population?']
 */
export function turnQueries(conversation: readonly ConversationItem[]): string[] {
  const asked = conversation.flatMap((item) =>
    item.type === 'message' && item.role === 'user' && item.content.trim() ? [item.content.trim()] : [],
  );
  const last = asked.at(-1);
  if (last === undefined) return [];
  const previous = asked.at(-2);
  return previous === undefined ? [last] : [last, `${previous}\n${last}`];
}

/** Runs the search of a request's `file_search` tool, for what the conversation asks ({@link turnQueries}). */
export async function searchForTurn(
  files: FileLibrary,
  owner: string,
  tool: ParsedFileSearch,
  conversation: ConversationItem[],
  signal: AbortSignal,
): Promise<Sources | null> {
  const queries = turnQueries(conversation);
  if (!queries.length) return null;
  const results = await files.search(owner, tool.vectorStoreIds, {
    queries,
    maxResults: tool.maxResults,
    filter: tool.filter,
    ...tool.ranking,
    signal,
  });
  return { queries, results };
}

/** The results as the `file_search_call` item shows them (`include: ["file_search_call.results"]`). */
export const itemResults = (sources: Sources): FileSearchResult[] =>
  sources.results.map((r) => ({
    file_id: r.file_id,
    filename: r.filename,
    score: r.score,
    text: r.content.map((part) => part.text).join('\n'),
    attributes: r.attributes,
  }));

/**
 * The messages with the sources given to the model: in the system message (first, as every chat template takes it),
 * numbered so that the answer can cite them as `[1]`. `count` gives only the first sources: the route gives fewer
 * when the prompt would not fit the model's context window.
 */
export function withSources(messages: ChatMessage[], sources: Sources, count: number): ChatMessage[] {
  const given = sources.results.slice(0, count);
  if (!given.length) return messages;
  const passages = given
    .map((r, i) => `[${i + 1}] ${r.filename}\n${r.content.map((part) => part.text).join('\n')}`)
    .join('\n\n');
  const text =
    "Passages from the user's files, found by searching them for the user's question. Answer from them when they hold " +
    'the answer, and cite each passage you use by its number in square brackets, as [1].\n\n' +
    passages;
  const [first, ...rest] = messages;
  if (first?.role === 'system') return [{ ...first, content: `${first.content}\n\n${text}` }, ...rest];
  return [{ role: 'system', content: text }, ...messages];
}

/**
 * The citations of an answer that drew on `count` sources. Markers the model wrote (`[2]`) cite their source where
 * they stand. An answer without markers cites, at its end, the sources it shares the most distinctive words with
 * (those of the question aside), or the best-ranked source when it shares none: the passage it was given first.
 * One citation per file and place.
 */
export function citationsFor(text: string, sources: Sources, count: number): FileCitation[] {
  const given = sources.results.slice(0, count);
  if (!given.length || !text.trim()) return [];
  const cite = (r: SearchResult, index: number): FileCitation => ({
    type: 'file_citation',
    file_id: r.file_id,
    filename: r.filename,
    index,
  });
  const seen = new Set<string>();
  const citations: FileCitation[] = [];
  for (const match of text.matchAll(/\[(\d{1,2})(?:\s*[,;]\s*(\d{1,2}))*\]/g)) {
    for (const n of match[0].match(/\d+/g)!.map(Number)) {
      const source = given[n - 1];
      const index = match.index + match[0].length;
      if (source && !seen.has(`${source.file_id}@${index}`)) {
        seen.add(`${source.file_id}@${index}`);
        citations.push(cite(source, index));
      }
    }
  }
  if (citations.length) return citations;

  const asked = new Set(sources.queries.flatMap(words));
  const answer = new Set(words(text).filter((w) => !asked.has(w)));
  const shared = given.map((r) => words(r.content.map((p) => p.text).join(' ')).filter((w) => answer.has(w)));
  const overlap = shared.map((list) => new Set(list).size);
  const best = Math.max(...overlap);
  const chosen = best >= 2 ? given.filter((_, i) => overlap[i]! * 2 >= best) : [given[0]!];
  const files = new Map(chosen.map((r) => [r.file_id, r]));
  return [...files.values()].map((r) => cite(r, text.length));
}

/** Distinctive words: lower-cased runs of four or more letters or digits. */
const words = (text: string): string[] => text.toLowerCase().match(/[\p{L}\p{N}]{4,}/gu) ?? [];
