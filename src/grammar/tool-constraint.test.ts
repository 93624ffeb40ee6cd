import { describe, expect, it } from 'vitest';
import { grammarFor, randomWalks, referenceValidator } from '../../test/support/grammar-walk.ts';
import { BUNDLED_MODELS, HAS_STORIES_260K, STORIES_260K } from '../../test/support/lantern.ts';
import { SCHEMA_CORPUS } from '../../test/support/schema-corpus.ts';
import { EngineError, type ToolConstraint, type ToolDefinition } from '../engine-interface/index.ts';
import { ReplyParser } from '../tools/reply-parser.ts';
import { HERMES, LLAMA3_JSON, type ToolCallSyntax } from '../tools/tool-call-syntax.ts';
import { constraintGrammar, violation } from './output-constraint.ts';

/*
 * The grammar of replies that may call tools, walked at random on real vocabularies: whatever path a model takes
 * through the mask, every call it ends with names a declared function (the one asked for, when one is) and its
 * arguments validate (ajv with formats, and Lantern's own check agrees); `required` and a named function always call;
 * one call at most without parallel calls. The functions' parameters are object schemas of the structured-output
 * corpus.
 */
const objects = SCHEMA_CORPUS.filter(({ schema }) => schema.type === 'object' && schema.properties);
const TOOLS: ToolDefinition[] = objects.slice(0, 12).map(({ schema }, i) => ({ name: `fn_${i}`, parameters: schema }));
const weather: ToolDefinition = {
  name: 'get_weather',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' }, unit: { enum: ['celsius', 'fahrenheit'] } },
    required: ['city'],
  },
};

const TOKENIZERS = [
  { name: 'tiny-chat', folder: `${BUNDLED_MODELS}/tiny-chat`, stops: [2, 0], run: true },
  { name: 'stories260K', folder: STORIES_260K, stops: [2, 1], run: HAS_STORIES_260K },
];

const ANSWER = {
  type: 'object',
  properties: { ok: { type: 'boolean' } },
  required: ['ok'],
  additionalProperties: false,
};
const MODES: {
  label: string;
  syntax: ToolCallSyntax;
  choice: ToolConstraint['choice'];
  parallel: boolean;
  text?: ToolConstraint['text'];
}[] = [
  { label: 'Hermes, auto, parallel', syntax: HERMES, choice: 'auto', parallel: true },
  { label: 'Hermes, required, parallel', syntax: HERMES, choice: 'required', parallel: true },
  { label: 'Hermes, required, one call', syntax: HERMES, choice: 'required', parallel: false },
  { label: 'Hermes, named', syntax: HERMES, choice: { name: 'fn_3' }, parallel: true },
  { label: 'Llama 3 JSON, auto', syntax: LLAMA3_JSON, choice: 'auto', parallel: false },
  { label: 'Llama 3 JSON, required', syntax: LLAMA3_JSON, choice: 'required', parallel: false },
  {
    label: 'Hermes, auto, with a response format',
    syntax: HERMES,
    choice: 'auto',
    parallel: true,
    text: { type: 'json', schema: ANSWER },
  },
];

describe.each(TOKENIZERS)('tool grammar walks on $name', ({ folder, stops, run }) => {
  it.runIf(run).each(MODES)('$label: every call names a declared function with valid arguments', async (mode) => {
    const grammar = await grammarFor(folder, stops);
    const check = referenceValidator();
    const tools = [weather, ...TOOLS];
    const { choice, parallel, text } = mode;
    const constraint: ToolConstraint = { type: 'tools', tools, choice, parallel, ...(text && { text }) };
    const names = new Set(tools.map((t) => t.name));
    const failures: string[] = [];
    let calls = 0;
    let completed = 0;
    // Half the walks of `auto` begin a call (its trigger, `<tool_call>` or `{"name": "`), half are free.
    const trigger = mode.syntax === HERMES ? '<tool_call>' : '{"name": "';
    // (Without the empty first piece SentencePiece puts before a text.)
    const opening = grammar.tokenizer
      .encode(trigger, { add_special_tokens: false })
      .filter((id, i) => i > 0 || grammar.tokenizer.decode([id]) !== '');
    for (let seed = 0; seed < 6; seed++) {
      const prefix = mode.choice === 'auto' && seed % 2 === 0 ? opening : [];
      const walks = await randomWalks(grammar, constraint, {
        seed,
        walks: 6,
        maxSteps: 300,
        endBias: 0.5,
        prefix,
        syntax: mode.syntax,
      });
      completed += walks.completed.length;
      for (const text of walks.completed) {
        const parser = new ReplyParser(mode.syntax, { names, ...(!mode.parallel && { maxCalls: 1 }) });
        parser.push(text);
        parser.end();
        const reply = { text: parser.text, toolCalls: parser.calls };
        calls += reply.toolCalls.length;
        const why = violation(constraint, reply);
        if (why) failures.push(`${JSON.stringify(text)}: ${why}`);
        if (mode.choice !== 'auto' && !reply.toolCalls.length) failures.push(`${JSON.stringify(text)}: no call`);
        if (!mode.parallel && reply.toolCalls.length > 1) failures.push(`${JSON.stringify(text)}: several calls`);
        for (const call of reply.toolCalls) {
          const tool = tools.find((t) => t.name === call.name)!;
          const invalid = check(tool.parameters, call.arguments);
          if (invalid) failures.push(`${call.name}(${call.arguments}): ${invalid}`);
        }
        // Nothing of a call is left in the text: a started call is always finished.
        if (mode.syntax === HERMES && parser.text.includes('<tool_call>'))
          failures.push(`a call left as text: ${text}`);
      }
    }
    expect(failures).toEqual([]);
    // The check is not vacuous: walks end, and calls are made.
    expect(completed).toBeGreaterThan(10);
    expect(calls).toBeGreaterThan(5);
  });
});

describe('violation of a tool constraint', () => {
  const constraint: ToolConstraint = {
    type: 'tools',
    tools: [weather],
    choice: 'auto',
    parallel: true,
  };
  const call = (args: string, name = 'get_weather') => ({ name, arguments: args });

  it('accepts text, or calls of declared functions whose arguments validate', () => {
    expect(violation(constraint, { text: 'Hello!', toolCalls: [] })).toBeUndefined();
    expect(violation(constraint, { text: '', toolCalls: [call('{"city": "Paris"}')] })).toBeUndefined();
  });

  it.each([
    ['no call when one is required', { choice: 'required' }, [], /no tool call/],
    ['another function than the one named', { choice: { name: 'other' } }, [call('{"city": "Paris"}')], /may not/],
    ['an undeclared function', {}, [call('{}', 'launch')], /may not/],
    ['arguments that are not JSON', {}, [call('{"city": ')], /not JSON/],
    ['arguments against the schema', {}, [call('{"unit": "kelvin"}')], /does not match/],
    [
      'two calls without parallel calls',
      { parallel: false },
      [call('{"city": "A"}'), call('{"city": "B"}')],
      /2 calls/,
    ],
  ] as const)('refuses %s', (_label, change, toolCalls, why) => {
    expect(violation({ ...constraint, ...change }, { text: '', toolCalls: [...toolCalls] })).toMatch(why);
  });

  it('holds a reply without calls to the response format, when there is one', () => {
    const json = { ...constraint, text: { type: 'json' as const, schema: { type: 'object' } } };
    expect(violation(json, { text: '{"a": 1}', toolCalls: [] })).toBeUndefined();
    expect(violation(json, { text: 'Hello', toolCalls: [] })).toMatch(/not JSON/);
  });

  it('refuses parameters it cannot enforce, naming the function parameter', async () => {
    const bad = { ...constraint, tools: [weather, { name: 'f', parameters: { type: 'object', not: {} } }] };
    const error = await constraintGrammar(bad, HERMES).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EngineError);
    expect(error).toMatchObject({ kind: 'invalid_request', param: 'tools[1].function.parameters' });
  });
});
