import { describe, expect, it } from 'vitest';
import { chatRequest } from '../../../test/support/chat-request.ts';
import type { ChatEvent, OutputConstraint } from '../../engine-interface/index.ts';
import { llamaGrammar } from '../../grammar/llama-grammar.ts';
import type { GgufMetadata } from './llama-chat-model.ts';
import { Wllama3ChatModel } from './wllama3-chat-model.ts';
import type { Wllama3Model } from './wllama3-runtime.ts';
import type { Wllama3Piece, Wllama3Plan } from './wllama3-request.ts';

/** A ChatML model's metadata: a byte-level vocabulary with its two control tokens, and its template. */
const metadata: GgufMetadata = {
  general: { architecture: 'qwen2' },
  tokenizer: {
    ggml: {
      model: 'gpt2',
      tokens: ['<|im_start|>', '<|im_end|>', 'a', 'b', 'c'],
      token_type: [3, 3, 1, 1, 1],
      eos_token_id: 1,
    },
    chat_template:
      '{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n',
  },
};

/**
 * wllama 3 faked: each row streams `reply` in `pieces` of text, a token a piece, with llama.cpp's counts on every
 * piece (a 9-token prompt, 4 of them reused), and ends it as llama.cpp does (`stop`, its end token counted, or
 * `length` at the plan's limit).
 */
function fakeWllama3(reply: string[]) {
  const rows: { prompt: string; plan: Wllama3Plan; scope: string | undefined }[] = [];
  let cancelled = 0;
  const model: Wllama3Model = {
    device: { runtime: 'wllama3', device: 'wasm' },
    runsOn: { device: 'wasm', threads: 1 },
    metadata,
    contextLength: 64,
    rows: 2,
    async *generate(prompt, plan, scope) {
      rows.push({ prompt, plan, scope });
      const counts = (generated: number) => ({ promptTokens: 9, completionTokens: generated, cachedTokens: 4 });
      const pieces = plan.maxTokens < 0 ? reply : reply.slice(0, plan.maxTokens);
      let done = false;
      try {
        for (const [i, text] of pieces.entries()) yield { text, counts: counts(i + 1) } satisfies Wllama3Piece;
        const cut = pieces.length < reply.length;
        done = true;
        yield { text: '', end: { reason: cut ? 'length' : 'stop', ...counts(pieces.length + (cut ? 0 : 1)) } };
      } finally {
        if (!done) cancelled += 1;
      }
    },
    dispose: async () => {},
  };
  return { model, rows, cancelled: () => cancelled };
}

const grammar = (constraint: OutputConstraint, syntax: Parameters<typeof llamaGrammar>[1], thinking: boolean) =>
  llamaGrammar(constraint, syntax, { thinking });

describe('a chat model on wllama 3', () => {
  it("streams a row's text through the choice pipeline, ends it at a stop sequence split across pieces, and counts as llama.cpp did", async () => {
    const fake = fakeWllama3(['Hel', 'lo ', 'ST', 'OP', ' more']);
    const events: ChatEvent[] = [];
    const result = await new Wllama3ChatModel(fake.model, grammar).generate(
      chatRequest({ stop: ['STOP'], cacheScope: 'key-a' }),
      { onEvent: (event) => events.push(event) },
    );
    expect(result.choices).toEqual([{ text: 'Hello ', finishReason: 'stop' }]);
    // llama.cpp's counts when the stop matched (four tokens generated), where the pipeline counted no tokens of text.
    expect(result.usage).toEqual({ promptTokens: 9, completionTokens: 4, cachedPromptTokens: 4 });
    expect(fake.cancelled()).toBe(1);
    expect(events.filter((e) => e.type === 'delta').map((e) => (e as { text: string }).text)).toEqual(['Hel', 'lo ']);
    expect(fake.rows[0]!.prompt).toBe('<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant');
    expect(fake.rows[0]!.scope).toBe('key-a');
  });

  it("hands each row the request's plan, the constraint as GBNF, and its end token counted", async () => {
    const fake = fakeWllama3(['{"a"', ': 1}']);
    const constraint: OutputConstraint = {
      type: 'json',
      schema: { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'], additionalProperties: false },
    };
    const result = await new Wllama3ChatModel(fake.model, grammar).generate(
      chatRequest({ constraint, temperature: 0.7, topP: 0.9, seed: 5, logitBias: { 2: -100 }, maxTokens: 8 }),
    );
    expect(result.choices[0]).toEqual({ text: '{"a": 1}', finishReason: 'stop' });
    expect(result.usage.completionTokens).toBe(3);
    const { plan } = fake.rows[0]!;
    expect(plan).toMatchObject({ temperature: 0.7, topP: 0.9, seed: 5, maxTokens: 8, logitBias: { 2: -100 } });
    expect(plan.grammar).toBe(await llamaGrammar(constraint));
  });

  it('runs n choices as rows, each seeded apart, and reads tool calls out of the text', async () => {
    const fake = fakeWllama3(['<tool_call>\n{"name": "f", ', '"arguments": {}}\n</tool_call>']);
    const tools: OutputConstraint = {
      type: 'tools',
      tools: [{ name: 'f', parameters: { type: 'object', properties: {}, additionalProperties: false } }],
      choice: 'required',
      parallel: false,
    };
    const result = await new Wllama3ChatModel(fake.model, grammar).generate(
      chatRequest({ constraint: tools, n: 2, seed: 3, temperature: 1 }),
    );
    expect(result.choices.map((c) => [c.finishReason, c.toolCalls?.map((call) => call.name)])).toEqual([
      ['tool_calls', ['f']],
      ['tool_calls', ['f']],
    ]);
    expect(new Set(fake.rows.map((r) => r.plan.seed)).size).toBe(2);
    expect(fake.rows[0]!.plan.grammar).toBe(await llamaGrammar(tools));
  });

  it('refuses what wllama 3 cannot run as Lantern defines it with a 400 naming the param, before it runs', async () => {
    const fake = fakeWllama3(['a']);
    const model = new Wllama3ChatModel(fake.model, grammar);
    await expect(model.generate(chatRequest({ presencePenalty: 0.5 }))).rejects.toMatchObject({
      kind: 'invalid_request',
      param: 'presence_penalty',
    });
    await expect(model.generate(chatRequest({ logprobs: 0 }))).rejects.toMatchObject({ param: 'logprobs' });
    // A constraint llama.cpp's grammar parser refuses: no logits path to enforce it on instead.
    const long: OutputConstraint = { type: 'json', schema: { type: 'string', minLength: 2000 } };
    await expect(model.generate(chatRequest({ constraint: long }))).rejects.toMatchObject({
      param: 'response_format',
    });
    // A control token spelled in a message would be read as that token.
    const spelled = chatRequest({ messages: [{ role: 'user', content: 'say <|im_end|>' }] });
    await expect(model.generate(spelled)).rejects.toMatchObject({ param: 'messages' });
    expect(fake.rows).toEqual([]);
  });
});
