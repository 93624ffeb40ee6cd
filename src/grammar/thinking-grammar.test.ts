import { describe, expect, it } from 'vitest';
import { grammarFor, randomWalks, referenceValidator } from '../../test/support/grammar-walk.ts';
import { BUNDLED_MODELS } from '../../test/support/lantern.ts';
import type { ToolConstraint } from '../engine-interface/index.ts';
import { ReplyParser } from '../tools/reply-parser.ts';
import { HERMES } from '../tools/tool-call-syntax.ts';
import { constraintGrammar } from './output-constraint.ts';
import { ThoughtSplitter } from '../generation/thought-splitter.ts';

/*
 * A reasoning model's constrained reply: the thought is free (inside `<think>…</think>`), the answer after it is what
 * the constraint allows. Walked at random on tiny-chat's vocabulary (byte-level: `<think>` is spelled in bytes there),
 * after a thought that the walk is made to write.
 */
const SCHEMA = {
  type: 'object',
  properties: { city: { type: 'string', maxLength: 12 }, ok: { type: 'boolean' } },
  required: ['city', 'ok'],
  additionalProperties: false,
};
const THOUGHT = '<think>\nThe user wants JSON like {"city": or </thin or <tool_call>.\n</think>\n\n';

function answerOf(text: string) {
  const splitter = new ThoughtSplitter();
  const { thought, answer } = splitter.push(text);
  return { thought: thought + splitter.flush(), answer };
}

describe('a constraint after a thought', () => {
  it('leaves the thought free and holds the answer to the schema', async () => {
    const grammar = await grammarFor(`${BUNDLED_MODELS}/tiny-chat`, [2, 0]);
    const prefix = Array.from(grammar.tokenizer.encode(THOUGHT, { add_special_tokens: false }));
    const constraint = { type: 'json' as const, schema: SCHEMA };
    const { completed, unfinished } = await randomWalks(grammar, constraint, { walks: 6, prefix, thinking: true });
    expect(completed.length + unfinished).toBe(6);
    expect(completed.length).toBeGreaterThan(0);
    const validate = referenceValidator();
    for (const text of completed) {
      const { thought, answer } = answerOf(text);
      expect(thought).toBe('The user wants JSON like {"city": or </thin or <tool_call>.');
      expect(validate(SCHEMA, answer)).toBeUndefined();
    }
  });

  it('makes a model that must call a tool think first, then call it', async () => {
    const grammar = await grammarFor(`${BUNDLED_MODELS}/tiny-chat`, [2, 0]);
    const constraint: ToolConstraint = {
      type: 'tools',
      tools: [{ name: 'get_weather', parameters: SCHEMA }],
      choice: 'required',
      parallel: false,
    };
    const prefix = Array.from(grammar.tokenizer.encode(THOUGHT, { add_special_tokens: false }));
    const { completed } = await randomWalks(grammar, constraint, { walks: 4, prefix, thinking: true, maxSteps: 400 });
    expect(completed.length).toBeGreaterThan(0);
    for (const text of completed) {
      const parser = new ReplyParser(HERMES, { names: new Set(['get_weather']) });
      parser.push(answerOf(text).answer);
      parser.end();
      expect(parser.calls.map((c) => c.name)).toEqual(['get_weather']);
    }
  });

  it('refuses an answer before the thought, and is cached apart from the grammar without one', async () => {
    const grammar = await grammarFor(`${BUNDLED_MODELS}/tiny-chat`, [2, 0]);
    const prefix = Array.from(grammar.tokenizer.encode('{"city":', { add_special_tokens: false }));
    const constraint = { type: 'json' as const, schema: SCHEMA };
    await expect(randomWalks(grammar, constraint, { walks: 1, prefix, thinking: true })).rejects.toThrow(/refused/);
    const [plain, thinking] = await Promise.all([
      constraintGrammar(constraint, HERMES),
      constraintGrammar(constraint, HERMES, { thinking: true }),
    ]);
    expect('ebnf' in plain).toBe(true);
    expect(JSON.stringify(thinking)).toContain('<think>');
  });
});
