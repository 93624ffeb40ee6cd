import { describe, expect, it } from 'vitest';
import type { ToolConstraint } from '../engine-interface/index.ts';
import { HERMES, LLAMA3_JSON } from '../tools/tool-call-syntax.ts';
import { gbnfLiteral, gbnfOf, llamaGrammar } from './llama-grammar.ts';

/*
 * The translation of XGrammar's grammars into GBNF, as text. That llama.cpp parses it and accepts the same language
 * as XGrammar is proved with llama.cpp itself in test/llama-grammar.test.ts.
 */
describe('gbnfOf', () => {
  it('renames rules to what GBNF takes and drops the lookahead after a string', () => {
    const ebnf = ['root ::= o1_0_0', 'o1_0_0 ::= "\\"" upto_2 "\\"" (= [,:}\\]])', 'upto_2 ::= "" | [a-z]{1,2}'].join(
      '\n',
    );
    expect(gbnfOf({ ebnf })).toBe(
      ['root ::= o1-0-0', 'o1-0-0 ::= "\\x22" upto-2 "\\x22"', 'upto-2 ::= "" | [a-z] {1,2}'].join('\n'),
    );
  });

  it("writes XGrammar's escapes with GBNF's, which knows no \\-, \\^ or \\0", () => {
    const ebnf = String.raw`root ::= [^"\\\x00-\x1f] [\-\]\^a-c\ud800] [^\0] "a\"b\\c\x0a"`;
    expect(gbnfOf({ ebnf })).toBe(
      String.raw`root ::= [^\x22\x5c\x00-\x1f] [\x2d\x5d\x5ea-c\ud800] [^\x00] "a\x22b\x5cc\x0a"`,
    );
  });

  it('keeps non-ASCII characters and ranges as code points', () => {
    expect(gbnfOf({ ebnf: 'root ::= "é€" [\u00e0-\u00ff\u{1f600}-\u{1f64f}]' })).toBe(
      'root ::= "é€" [à-ÿ\u{1f600}-\u{1f64f}]',
    );
  });

  it('gives undefined for EBNF it cannot read, rather than guess', () => {
    for (const ebnf of ['root ::= "a', 'root ::= a{x}', 'root ::= a.b', 'root ::= "\\xg1"', 'a', 'root ::= [a'])
      expect(gbnfOf({ ebnf })).toBeUndefined();
  });

  it('writes a structural tag as its sequence, each embedded grammar under a prefix of its own', () => {
    const grammar = (ebnf: string) => ({ type: 'grammar', grammar: ebnf });
    const format = {
      type: 'sequence',
      elements: [
        { type: 'const_string', value: 'a"' },
        {
          type: 'or',
          elements: [
            { type: 'tag', begin: '<x>', content: grammar('root ::= v_0\nv_0 ::= "1"'), end: '</x>' },
            grammar('root ::= "2"'),
          ],
        },
      ],
    };
    expect(gbnfOf({ structuralTag: { type: 'structural_tag', format } })).toBe(
      [
        'root ::= ("a\\x22" (("<x>" g0-root "</x>") | g1-root))',
        'g0-root ::= g0-v-0',
        'g0-v-0 ::= "1"',
        'g1-root ::= "2"',
      ].join('\n'),
    );
  });

  it("writes text up to a tag's end as text that does not hold the end, then the end", () => {
    const format = { type: 'tag', begin: '<t>', content: { type: 'any_text' }, end: 'aab' };
    expect(gbnfOf({ structuralTag: { type: 'structural_tag', format } })).toBe(
      [
        'root ::= ("<t>" t0-0)',
        't0-0 ::= "a" t0-1 | [^a] t0-0',
        't0-1 ::= "a" t0-2 | [^a] t0-0',
        't0-2 ::= "a" t0-2 | "b" | [^ab] t0-0',
      ].join('\n'),
    );
  });
});

describe('llamaGrammar', () => {
  const weather = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
  const tools = (choice: ToolConstraint['choice']): ToolConstraint => ({
    type: 'tools',
    tools: [{ name: 'get_weather', parameters: weather }],
    choice,
    parallel: true,
  });

  it("gives undefined for a repetition past llama.cpp's bound, which its parser would refuse whole", async () => {
    const long = (minLength: number) =>
      llamaGrammar({ type: 'json', schema: { type: 'object', properties: { s: { type: 'string', minLength } } } });
    expect(await long(1999)).toContain('{1999}');
    expect(await long(2000)).toBeUndefined();
  });

  it('writes calls only for a required or named call, in the model family syntax', async () => {
    const hermes = (await llamaGrammar(tools('required'), HERMES))!;
    expect(hermes).toContain(gbnfLiteral('<tool_call>\n{"name": "get_weather", "arguments": '));
    expect(hermes).toContain(gbnfLiteral('}\n</tool_call>'));
    const llama3 = (await llamaGrammar(tools({ name: 'get_weather' }), LLAMA3_JSON))!;
    expect(llama3).toContain(gbnfLiteral('{"name": "get_weather", "parameters": '));
    expect(llama3).not.toContain('tool');
  });

  it('writes auto as text without the call marker, then calls from it on, then text again', async () => {
    const hermes = (await llamaGrammar(tools('auto'), HERMES))!;
    // The marker's first character leads on into it, any other stays in the text; the text may end anywhere.
    expect(hermes).toMatch(/^root ::= t\d+-0$/m);
    expect(hermes).toMatch(/^t(\d+)-0 ::= "" \| "<" t\1-1 \| \[\^\\x3c\] t\1-0$/m);
    expect(hermes).toMatch(/^t(\d+)-1 ::= "" \| "<" t\1-1 \| "t" t\1-2 \| \[\^\\x3ct\] t\1-0$/m);
    expect(hermes).toContain(gbnfLiteral('\n{"name": "get_weather", "arguments": '));
    expect(await llamaGrammar(tools('auto'), LLAMA3_JSON)).toBeTypeOf('string');
  });

  it('gives undefined for a structural tag it does not know how to write', () => {
    const format = { type: 'triggered_tags', triggers: ['<a>', '<b>'], tags: [], at_least_one: false };
    expect(gbnfOf({ structuralTag: { type: 'structural_tag', format } })).toBeUndefined();
    expect(gbnfOf({ structuralTag: { type: 'structural_tag', format: { type: 'json_schema' } } })).toBeUndefined();
  });

  it('is cached per constraint, syntax and thought, and refuses what constraintGrammar refuses', async () => {
    const constraint = { type: 'json' as const, schema: weather };
    expect(llamaGrammar(constraint)).toBe(llamaGrammar(constraint));
    expect(llamaGrammar(constraint)).not.toBe(llamaGrammar(constraint, HERMES, { thinking: true }));
    const refused = { type: 'json' as const, schema: { type: 'string', pattern: '(?=a)b' }, param: 'text.format' };
    await expect(llamaGrammar(refused)).rejects.toMatchObject({ kind: 'invalid_request', param: 'text.format' });
  });
});
