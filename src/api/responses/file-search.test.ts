import { describe, expect, it } from 'vitest';
import { corpusChunks, embed } from '../../document-search/document-corpus.test-support.ts';
import { HybridIndex } from '../../document-search/index.ts';
import type { FileLibrary, LibrarySearch } from '../../file-search/index.ts';
import { ApiError } from '../errors.ts';
import { DEFAULT_LIMITS } from '../options.ts';
import { searchForTurn, turnQueries } from './file-search.ts';
import { responsesParser, type ConversationItem } from './schema.ts';

const user = (content: string): ConversationItem => ({ type: 'message', role: 'user', content });
const assistant = (content: string): ConversationItem => ({ type: 'message', role: 'assistant', content });

/** A file library over the document search's test corpus and its stand-in embedding, recording what it is asked. */
function corpusLibrary() {
  const index = new HybridIndex();
  index.add(corpusChunks());
  const asked: LibrarySearch[] = [];
  const library = {
    search: async (_owner: string, _stores: string[], params: LibrarySearch) => {
      asked.push(params);
      return index.search({ ...params, queryVectors: params.queries.map(embed) }).map(({ chunk, score }) => ({
        file_id: chunk.fileId,
        filename: chunk.id,
        score,
        attributes: null,
        content: [{ type: 'text' as const, text: chunk.text }],
      }));
    },
  } as unknown as FileLibrary;
  return { library, asked };
}

const parse = responsesParser(DEFAULT_LIMITS);
const withTool = (tool: Record<string, unknown>) =>
  parse({ model: 'm', input: 'hi', tools: [{ type: 'file_search', vector_store_ids: ['vs_1'], ...tool }] });

describe('file_search queries', () => {
  it('searches a follow-up together with the question before it', async () => {
    const { library, asked } = corpusLibrary();
    const tool = withTool({}).fileSearch!;
    const conversation = [user('Who is Dr. Okonkwo?'), assistant('The ombudsperson.'), user('how do I reach them?')];
    const sources = await searchForTurn(library, 'key', tool, conversation, new AbortController().signal);
    expect(sources!.queries).toEqual(['how do I reach them?', 'Who is Dr. Okonkwo?\nhow do I reach them?']);
    expect(asked[0]!.queries).toEqual(sources!.queries);
    expect(sources!.results[0]!.filename).toBe('hr-conduct');
    // The follow-up alone names nothing that passage holds.
    const alone = await searchForTurn(library, 'key', tool, conversation.slice(2), new AbortController().signal);
    expect(alone!.results.slice(0, 5).map((r) => r.filename)).not.toContain('hr-conduct');
  });

  it('finds a new question by its own words first', async () => {
    const { library } = corpusLibrary();
    const conversation = [user('What does error E42 mean?'), assistant('No IP address.'), user('chilled tomato soup')];
    const sources = await searchForTurn(
      library,
      'key',
      withTool({}).fileSearch!,
      conversation,
      new AbortController().signal,
    );
    expect(sources!.results[0]!.filename).toBe('recipe-gazpacho');
  });

  it('takes the last user message alone when it is the first, and nothing when there is none', () => {
    expect(turnQueries([{ type: 'message', role: 'system', content: 'Be brief.' }, user('  Hotel budget? ')])).toEqual([
      'Hotel budget?',
    ]);
    expect(turnQueries([assistant('Hello.'), user('   ')])).toEqual([]);
    expect(turnQueries([user('a'), user('b'), assistant('c'), user('d')])).toEqual(['d', 'b\nd']);
  });
});

describe('file_search tool parameters', () => {
  it('retrieves 20 results by default, as OpenAI does', () => {
    expect(withTool({}).fileSearch!.maxResults).toBe(20);
    expect(withTool({ max_num_results: 3 }).fileSearch!.maxResults).toBe(3);
  });

  it('takes the rankers OpenAI allows in the tool, and refuses others with a 400 naming the param', () => {
    for (const ranker of ['auto', 'default-2024-11-15']) {
      expect(withTool({ ranking_options: { ranker, score_threshold: 0.3 } }).fileSearch!.ranking).toEqual({
        scoreThreshold: 0.3,
        weights: undefined,
      });
    }
    // `none` is the vector store search's (no re-ranking); the tool's enum has no `none`.
    for (const ranker of ['none', 'bm25']) {
      let refusal: unknown;
      try {
        withTool({ ranking_options: { ranker } });
      } catch (error) {
        refusal = error;
      }
      expect(refusal).toBeInstanceOf(ApiError);
      expect(refusal).toMatchObject({ status: 400, param: 'tools[0].ranking_options.ranker' });
    }
  });
});
