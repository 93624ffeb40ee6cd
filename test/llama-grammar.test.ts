import { beforeAll, describe, expect, it } from 'vitest';
import {
  getLlama,
  LlamaGrammarEvaluationState,
  type Llama,
  type LlamaContext,
  type LlamaModel,
  type Token,
} from 'node-llama-cpp';
import { EngineError, type OutputConstraint, type ToolConstraint } from '../src/engine-interface/index.ts';
import { llamaGrammar } from '../src/grammar/llama-grammar.ts';
import { violation } from '../src/grammar/output-constraint.ts';
import { seededRandom } from '../src/generation/seeded-random.ts';
import { ReplyParser } from '../src/tools/reply-parser.ts';
import { HERMES, LLAMA3_JSON, type ToolCallSyntax } from '../src/tools/tool-call-syntax.ts';
import { grammarFor, randomWalks } from './support/grammar-walk.ts';
import { BUNDLED_MODELS } from './support/lantern.ts';
import { REAL_WORLD_SCHEMAS } from './support/real-world-schemas.ts';
import { SCHEMA_CORPUS } from './support/schema-corpus.ts';

/*
 * llama.cpp runs Lantern's output constraints natively as GBNF (src/grammar/llama-grammar.ts), translated from the
 * grammar XGrammar runs on the mask path. Proved with llama.cpp itself (node-llama-cpp's addon): every corpus schema's
 * GBNF parses; on samples, llama.cpp's grammar accepts exactly the texts XGrammar's matcher accepts (walks through
 * XGrammar's grammar, and mutations of them); and generation under the GBNF on the bundled tiny-chat GGUF ends only in
 * replies the constraint's validator accepts.
 */

type Case = {
  name: string;
  constraint: OutputConstraint;
  syntax: ToolCallSyntax;
  thinking: boolean;
  /** Texts compared besides the walks (and their edits): calls that random walks through free text rarely reach. */
  samples?: string[];
};

const json = (name: string, schema: Record<string, unknown> | null): Case => ({
  name,
  constraint: { type: 'json', schema },
  syntax: HERMES,
  thinking: false,
});

const WEATHER = {
  type: 'object',
  properties: {
    city: { type: 'string', maxLength: 12 },
    unit: { enum: ['celsius', 'fahrenheit'] },
    days: { type: 'integer', minimum: 1, maximum: 14 },
  },
  required: ['city'],
  additionalProperties: false,
};
const SEARCH = {
  type: 'object',
  properties: { query: { type: 'string', pattern: '^[a-z ]{1,20}$' }, limit: { type: 'integer', maximum: 50 } },
  required: ['query', 'limit'],
  additionalProperties: false,
};
const tools = (
  choice: ToolConstraint['choice'],
  parallel: boolean,
  extra: Partial<ToolConstraint> = {},
): ToolConstraint => ({
  type: 'tools',
  tools: [
    { name: 'get_weather', parameters: WEATHER },
    { name: 'search', parameters: SEARCH },
  ],
  choice,
  parallel,
  ...extra,
});
const toolCase = (name: string, constraint: ToolConstraint, syntax = HERMES, thinking = false): Case => ({
  name,
  constraint,
  syntax,
  thinking,
  samples: syntax === HERMES ? HERMES_SAMPLES : undefined,
});

const CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>';
const SEARCH_CALL = '<tool_call>\n{"name": "search", "arguments": {"query": "red fox", "limit": 5}}\n</tool_call>';
/** Replies around Hermes calls: text, calls, text after them, broken calls, markers begun but not finished. */
const HERMES_SAMPLES = [
  '',
  'Plain text with a </tool_call> and a <tool_ca',
  CALL,
  `Let me look. ${CALL}`,
  `${CALL}\nDone.`,
  `${CALL}\n${SEARCH_CALL}`,
  `${CALL}${SEARCH_CALL}`,
  '<tool_call>\n{"name": "nope", "arguments": {}}\n</tool_call>',
  '<tool_call>',
  'a <tool_call>\n{"name": "search", "arguments": {"query": "RED"}}\n</tool_call>',
];

/** Tool constraints and thinking prefixes. */
const TOOL_CASES: Case[] = [
  toolCase('required, one call', tools('required', false)),
  toolCase('required, parallel calls', tools('required', true)),
  toolCase('a named function', tools({ name: 'search' }, true)),
  toolCase('required, Llama 3 JSON', tools('required', true), LLAMA3_JSON),
  toolCase('auto, Llama 3 JSON (a call or text)', tools('auto', false), LLAMA3_JSON),
  toolCase('auto with a response format', tools('auto', false, { text: { type: 'json', schema: WEATHER } })),
  toolCase('required, thinking first', tools('required', false), HERMES, true),
  toolCase('auto, Hermes, one call', tools('auto', false)),
  toolCase('auto, Hermes, parallel calls', tools('auto', true)),
  toolCase('auto, Hermes, thinking first', tools('auto', true), HERMES, true),
  { ...json('json schema, thinking first', WEATHER), thinking: true },
];

let llama: Llama;
beforeAll(async () => {
  llama = await getLlama({ gpu: false, build: 'never' });
});

/** Whether llama.cpp's grammar accepts the whole text (node-llama-cpp's own check, code point by code point). */
const gbnfAccepts = (grammar: Awaited<ReturnType<Llama['createGrammar']>>, text: string) =>
  (grammar as unknown as { _testText(text: string): boolean })._testText(text);

describe('GBNF for llama.cpp', () => {
  it("parses in llama.cpp for every corpus schema that Lantern's compiler accepts", async () => {
    const schemas = [
      ...SCHEMA_CORPUS.map(({ name, schema }) => ({ name: `corpus/${name}`, schema })),
      ...REAL_WORLD_SCHEMAS.map(({ kind, name, schema }) => ({ name: `${kind}/${name}`, schema })),
    ];
    let parsed = 0;
    let refused = 0;
    const untranslated: string[] = [];
    const failures: string[] = [];
    for (const { name, schema } of schemas) {
      let gbnf: string | undefined;
      try {
        gbnf = await llamaGrammar({ type: 'json', schema });
      } catch (error) {
        if (!(error instanceof EngineError && error.kind === 'invalid_request')) throw error;
        refused++;
        continue;
      }
      if (gbnf === undefined) {
        untranslated.push(name);
        continue;
      }
      try {
        await llama.createGrammar({ grammar: gbnf });
        parsed++;
      } catch (error) {
        failures.push(`${name}: ${(error as Error).message}`);
      }
    }
    console.info(`GBNF: ${parsed} of ${schemas.length} schemas parsed by llama.cpp, ${refused} refused with a 400`);
    expect(failures).toEqual([]);
    expect(untranslated).toEqual([]);
    expect(parsed + refused).toBe(schemas.length);
    expect(parsed).toBeGreaterThan(schemas.length / 2);
  });

  it('parses for tool constraints and thinking prefixes', async () => {
    for (const { constraint, syntax, thinking } of TOOL_CASES) {
      const gbnf = await llamaGrammar(constraint, syntax, { thinking });
      expect(gbnf).toBeTypeOf('string');
      await llama.createGrammar({ grammar: gbnf! });
    }
  });
});

/** Small edits of a text: most make it invalid, some keep it valid. */
function mutations(text: string, seed: number): string[] {
  const random = seededRandom(seed);
  const at = () => Math.floor(random() * (text.length + 1));
  const pick = () => '"{}[],:0-9a\\ .é\nt<'[Math.floor(random() * 18)]!;
  const out = [text.slice(0, -1), text + '}', text + ' '];
  for (let k = 0; k < 6; k++) {
    const i = at();
    out.push(text.slice(0, i) + pick() + text.slice(i), text.slice(0, i) + text.slice(i + 1));
  }
  return [...new Set(out)].filter((t) => t !== text);
}

let walker: Awaited<ReturnType<typeof grammarFor>>;
beforeAll(async () => {
  walker = await grammarFor(`${BUNDLED_MODELS}/tiny-chat`, [2, 0]);
});

/** Whether XGrammar's matcher (the mask path's) accepts the whole text, then the end. */
async function xgrammarAccepts({ constraint, syntax, thinking }: Case, text: string): Promise<boolean> {
  const [mask] = await walker.compiler.matchers(constraint, 1, syntax, thinking);
  try {
    for (const token of walker.tokenizer.encode(text, { add_special_tokens: false })) {
      if (!mask!.accept(token)) return false;
    }
    return mask!.accept(walker.stops[0]!);
  } finally {
    mask!.dispose();
  }
}

/**
 * Texts on which the two grammars of a case disagree: random walks through XGrammar's grammar (after a thought where
 * the case thinks first), mutations of them, and `samples`; with how many of them XGrammar accepted and how many
 * walks ended.
 */
async function disagreements(c: Case, samples: string[] = [], walks = 3) {
  const grammar = await llama.createGrammar({ grammar: (await llamaGrammar(c.constraint, c.syntax, c))! });
  const thought = '<think>\nA </thin thought.\n</think>\n\n';
  const prefix = c.thinking ? Array.from(walker.tokenizer.encode(thought, { add_special_tokens: false })) : [];
  const { completed } = await randomWalks(walker, c.constraint, { ...c, walks, prefix, maxSteps: 300 });
  const found: string[] = [];
  let accepted = 0;
  const written = samples.map((text) => (c.thinking ? thought + text : text));
  const texts = [...completed, ...written].flatMap((text, w) => [text, ...mutations(text, w)]);
  for (const sample of texts) {
    const [xg, llamaCpp] = [await xgrammarAccepts(c, sample), gbnfAccepts(grammar, sample)];
    if (xg) accepted++;
    if (xg !== llamaCpp) found.push(`${JSON.stringify(sample)}: XGrammar ${xg}, llama.cpp ${llamaCpp}`);
  }
  return { found, accepted, completed: completed.length };
}

describe('GBNF accepts what XGrammar accepts', () => {
  it.each([...SCHEMA_CORPUS.map(({ name, schema }) => json(name, schema)), json('json_object', null), ...TOOL_CASES])(
    '$name',
    async (c) => {
      const { found, accepted, completed } = await disagreements(c, c.samples);
      expect(found).toEqual([]);
      // The walks ended and were accepted: the comparison is not vacuous.
      expect(completed).toBeGreaterThan(0);
      expect(accepted).toBeGreaterThanOrEqual(completed);
    },
  );

  it('on every real-world schema that compiles', async () => {
    const found: string[] = [];
    let [schemas, texts] = [0, 0];
    for (const { kind, name, schema } of REAL_WORLD_SCHEMAS) {
      const c = json(`${kind}/${name}`, schema);
      try {
        await llamaGrammar(c.constraint);
      } catch {
        continue; // refused with a 400: counted in the test above
      }
      const result = await disagreements(c, [], 1);
      found.push(...result.found.map((f) => `${c.name}: ${f}`));
      schemas++;
      texts += result.accepted;
    }
    console.info(`GBNF and XGrammar agree on ${schemas} real-world schemas (${texts} accepted texts)`);
    expect(found).toEqual([]);
    expect(texts).toBeGreaterThan(schemas);
  }, 300_000);
});

const PROMPT = '<|im_start|>user\nAnswer in JSON.<|im_end|>\n<|im_start|>assistant\n';

/**
 * One reply generated under the case's GBNF (sampled at 0.9, seeded), its tokens, and whether it ended (an
 * end-of-generation token, or node-llama-cpp's generator returned, as it may once the grammar is complete; a dead end of
 * the grammar would end it too, and be found invalid) rather than being cut at 256 tokens.
 */
async function generate(model: LlamaModel, context: LlamaContext, c: Case, seed: number) {
  const grammar = await llama.createGrammar({ grammar: (await llamaGrammar(c.constraint, c.syntax, c))! });
  const sequence = context.getSequence();
  const tokens: Token[] = [];
  try {
    const grammarEvaluationState = new LlamaGrammarEvaluationState({ model, grammar });
    const options = { temperature: 0.9, seed, grammarEvaluationState };
    for await (const token of sequence.evaluate(model.tokenize(PROMPT, true), options)) {
      if (model.isEogToken(token)) break;
      tokens.push(token);
      if (tokens.length >= 256) return { tokens, ended: false };
    }
  } finally {
    sequence.dispose();
  }
  return { tokens, ended: true };
}

/** Why a finished reply breaks its case's constraint (after its thought), or nothing when it holds. */
function replyViolation({ constraint, syntax, thinking }: Case, reply: string): string | undefined {
  let text = thinking ? reply.slice(reply.indexOf('</think>\n\n') + '</think>\n\n'.length) : reply;
  if (constraint.type === 'json') return violation(constraint, { text });
  const parser = new ReplyParser(syntax, { names: new Set(constraint.tools.map((t) => t.name)) });
  parser.push(text);
  parser.end();
  text = parser.text;
  return violation(constraint, { text, toolCalls: parser.calls });
}

describe('generation under the GBNF (llama.cpp)', () => {
  it('ends only in replies that the constraint accepts, on tiny-chat', async () => {
    const model = await llama.loadModel({ modelPath: `${BUNDLED_MODELS}/tiny-chat/gguf/tiny-chat-f32.gguf` });
    const context = await model.createContext({ contextSize: 1024, sequences: 1, threads: 1 });
    const cases = [
      ...SCHEMA_CORPUS.filter((_, i) => i % 4 === 0).map(({ name, schema }) => json(name, schema)),
      ...TOOL_CASES,
    ];
    let [valid, cut] = [0, 0];
    const invalid: string[] = [];
    try {
      for (const [i, c] of cases.entries()) {
        const { tokens, ended } = await generate(model, context, c, i);
        if (!ended) {
          cut++;
          continue;
        }
        const text = model.detokenize(tokens, true);
        const why = (await xgrammarAccepts(c, text)) ? replyViolation(c, text) : 'XGrammar refuses it';
        if (why) invalid.push(`${c.name}: ${JSON.stringify(text)} — ${why}`);
        else valid++;
      }
    } finally {
      await context.dispose();
      await model.dispose();
    }
    console.info(`GBNF generation: ${valid} valid, ${invalid.length} invalid, ${cut} cut at 256 tokens`);
    expect(invalid).toEqual([]);
    expect(valid).toBeGreaterThan(cases.length / 2);
  }, 300_000);

  it('lets a reasoning model think in its own <think> token, then answer as the constraint asks (tiny-think)', async () => {
    const model = await llama.loadModel({ modelPath: `${BUNDLED_MODELS}/tiny-think/gguf/tiny-think-f32.gguf` });
    const context = await model.createContext({ contextSize: 1024, sequences: 1, threads: 1 });
    const [think] = model.tokenize('<think>', true);
    try {
      for (const [seed, c] of TOOL_CASES.filter((t) => t.thinking).entries()) {
        const { tokens, ended } = await generate(model, context, c, seed);
        expect(ended).toBe(true);
        // The thought opens with the model's own special token, which llama.cpp's grammar matches by its text.
        expect(tokens[0]).toBe(think);
        expect(replyViolation(c, model.detokenize(tokens, true))).toBeUndefined();
      }
    } finally {
      await context.dispose();
      await model.dispose();
    }
  }, 120_000);
});

describe('what the GBNF leaves to the native run', () => {
  it('lets a control token through where its text fits, which the mask never does: the run must bias them off', async () => {
    const model = await llama.loadModel({ modelPath: `${BUNDLED_MODELS}/tiny-chat/gguf/tiny-chat-f32.gguf` });
    try {
      const constraint = {
        type: 'json' as const,
        schema: { type: 'object', properties: { name: { type: 'string' } } },
      };
      const grammar = await llama.createGrammar({ grammar: (await llamaGrammar(constraint))! });
      const state = new LlamaGrammarEvaluationState({ model, grammar });
      const sampler = (llama as unknown as { _bindings: { AddonSampler: GrammarSampler } })._bindings.AddonSampler;
      const inner = (state as unknown as { _state: unknown })._state;
      for (const token of model.tokenize('{"name":"', false)) sampler.acceptGrammarEvaluationStateToken(inner, token);
      const [imStart] = model.tokenize('<|im_start|>', true);
      expect(model.detokenize([imStart!], true)).toBe('<|im_start|>');
      expect(sampler.canBeNextTokenForGrammarEvaluationState(inner, imStart!)).toBe(true);
      // XGrammar's mask, through Lantern's guards, never allows it inside the JSON.
      const [mask] = await walker.compiler.matchers(constraint, 1);
      for (const token of walker.tokenizer.encode('{"name":"', { add_special_tokens: false })) mask!.accept(token);
      const logits = new Float32Array(walker.vocabulary.strings.length);
      mask!.apply(logits);
      mask!.dispose();
      expect(logits[walker.tokenizer.encode('<|im_start|>', { add_special_tokens: false })[0]!]).toBe(-Infinity);
    } finally {
      await model.dispose();
    }
  });
});

interface GrammarSampler {
  acceptGrammarEvaluationStateToken(state: unknown, token: Token): void;
  canBeNextTokenForGrammarEvaluationState(state: unknown, token: Token): boolean;
}
