import { describe, expect, it } from 'vitest';
import { violation } from '../../src/grammar/output-constraint.ts';
import { grammarFor, randomWalks, referenceValidator } from '../support/grammar-walk.ts';
import { BUNDLED_MODELS, HAS_STORIES_260K, STORIES_260K } from '../support/lantern.ts';
import { SCHEMA_CORPUS } from '../support/schema-corpus.ts';

/*
 * The grammar of every corpus schema, walked at random on real vocabularies: whatever path a model takes through the
 * mask, the text it ends with must be valid (ajv with formats, and Lantern's own validator agrees). This finds the
 * gaps of the grammar engine without a model, in seconds; test/structured-output/corpus.test.ts runs the models.
 */
const TOKENIZERS = [
  { name: 'tiny-chat', folder: `${BUNDLED_MODELS}/tiny-chat`, stops: [2, 0], run: true },
  { name: 'stories260K', folder: STORIES_260K, stops: [2, 1], run: HAS_STORIES_260K },
];

describe.each(TOKENIZERS)('grammar walks on $name', ({ folder, stops, run }) => {
  it.runIf(run)('every walk that ends is valid, for every schema of the corpus', async () => {
    const grammar = await grammarFor(folder, stops);
    const check = referenceValidator();
    const failures: string[] = [];
    let completed = 0;
    for (const [i, { name, schema }] of SCHEMA_CORPUS.entries()) {
      const walks = await randomWalks(grammar, { type: 'json', schema }, { seed: i });
      completed += walks.completed.length;
      for (const text of walks.completed) {
        const why = check(schema, text) ?? violation({ type: 'json', schema }, { text });
        if (why) failures.push(`${name}: ${text} — ${why}`);
      }
    }
    expect(failures).toEqual([]);
    // Most walks end: the check above is not vacuous.
    expect(completed).toBeGreaterThan(SCHEMA_CORPUS.length * 2);
  });
});
