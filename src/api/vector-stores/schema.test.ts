import { describe, expect, it } from 'vitest';
import { ApiError } from '../errors.ts';
import { parseBody, rankingOf, vectorStoreSchemas } from './schema.ts';

const schemas = vectorStoreSchemas(500);
const search = (ranking_options: Record<string, unknown>) =>
  parseBody(schemas, 'search', { query: 'hotel budget', ranking_options });

describe('vector store search ranking_options', () => {
  it('takes every ranker OpenAI allows there, `none` among them, and a threshold and weights', () => {
    for (const ranker of ['none', 'auto', 'default-2024-11-15']) {
      const options = search({ ranker, score_threshold: 0.25, hybrid_search: { embedding_weight: 2, text_weight: 1 } });
      expect(rankingOf(options.ranking_options)).toEqual({ scoreThreshold: 0.25, weights: { text: 1, vector: 2 } });
    }
  });

  it('refuses another ranker, or a threshold outside 0..1, with a 400 naming the param', () => {
    for (const [options, param] of [
      [{ ranker: 'bm25' }, 'ranking_options.ranker'],
      [{ score_threshold: 1.5 }, 'ranking_options.score_threshold'],
      [{ score_threshold: -0.1 }, 'ranking_options.score_threshold'],
    ] as const) {
      expect(() => search(options)).toThrow(ApiError);
      try {
        search(options);
      } catch (error) {
        expect(error).toMatchObject({ status: 400, param });
      }
    }
  });
});
