import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest, ChatResult, OutputConstraint } from '../src/index.ts';
import type { ChatModel } from '../src/engines/model-loaders.ts';
import { TaskQueue } from '../src/engines/task-queue.ts';
import type { LlamaCppCandidate } from '../src/engines/llama-cpp/llama-cpp-engine.ts';
import type { LlamaChatModel } from '../src/engines/llama-cpp/llama-chat-model.ts';
import { loadChatModel } from '../src/engines/llama-cpp/node-llama-runtime.ts';
import { llamaGrammar } from '../src/grammar/llama-grammar.ts';
import { chatRequest } from './support/chat-request.ts';
import { BUNDLED_MODELS, reference, type ChatReference } from './support/lantern.ts';

/**
 * Sampling plans drawn by node-llama-cpp's own sampler, on the bundled chat model's GGUF: what a native row draws is
 * what the logits path (Lantern's sampling on llama.cpp's distribution, which a request for logprobs takes) draws,
 * token for token, for greedy requests with OpenAI's logit bias and penalties; seeds repeat; a GBNF grammar
 * constrains.
 */
const tinyChat: LlamaCppCandidate = {
  engine: 'llama.cpp',
  model: `${BUNDLED_MODELS}/tiny-chat`,
  file: 'gguf/tiny-chat-f32.gguf',
};
const story = reference<ChatReference[]>('tiny-chat').find((r) => r.messages.at(-1)!.content === 'Tell me a story.')!;
/** A JSON object of one digit, as a hand-written GBNF and as the schema the reply is checked against. */
const DIGIT_GBNF = 'root ::= "{\\"n\\": " [0-9] "}"';
const DIGIT: OutputConstraint = {
  type: 'json',
  schema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false },
};

describe('native sampling plans (node-llama-cpp)', () => {
  let model: ChatModel & LlamaChatModel;
  const grammarsAsked: unknown[] = [];
  beforeAll(async () => {
    model = (await loadChatModel(
      { ...tinyChat, sequences: 2 },
      { id: 'tiny', queue: new TaskQueue() },
      {
        nativeGrammar: (constraint) => {
          grammarsAsked.push(constraint);
          return constraint === DIGIT ? Promise.resolve(DIGIT_GBNF) : llamaGrammar(constraint);
        },
      },
    )) as ChatModel & LlamaChatModel;
  });
  afterAll(() => model.dispose());

  const generate = (request: Partial<ChatRequest>) =>
    model.generate(chatRequest({ messages: story.messages, ...request }));
  const tokens = (result: ChatResult) => result.choices[0]!.text;
  /** The same request on the logits path: a request for alternatives in logprobs takes it. */
  const onLogits = async (request: Partial<ChatRequest>) => tokens(await generate({ ...request, logprobs: 1 }));

  it('draws greedy tokens natively exactly as the logits path does, with logit bias and penalties', async () => {
    expect(tokens(await generate({}))).toBe(story.greedy_text);
    expect(await onLogits({})).toBe(story.greedy_text);
    const requests: Partial<ChatRequest>[] = [
      // The tiny model is sure of its story: only strong penalties move it.
      { presencePenalty: 2, frequencyPenalty: 2 },
      { frequencyPenalty: -2 },
      { logitBias: { [story.greedy_ids[0]!]: -100, [story.greedy_ids[3]!]: 2 } },
    ];
    for (const request of requests) {
      const native = tokens(await generate(request));
      expect(native).not.toBe(story.greedy_text);
      expect(native).toBe(await onLogits(request));
    }
  });

  it('biases any token, an end token included', async () => {
    // The first greedy token pushed out of reach, then the end token made certain: an empty reply.
    const first = story.greedy_ids[0]!;
    expect(tokens(await generate({ logitBias: { [first]: -100 } })).startsWith(story.greedy_text.slice(0, 3))).toBe(
      false,
    );
    const ended = await generate({ maxTokens: 5, logitBias: Object.fromEntries(endTokens().map((id) => [id, 100])) });
    expect(ended.choices[0]).toMatchObject({ text: '', finishReason: 'stop' });
  });

  it('repeats a seeded sampled reply, with bias and penalties, and draws another from another seed', async () => {
    const sample = async (seed: number) =>
      tokens(
        await generate({
          maxTokens: 40,
          temperature: 1.5,
          seed,
          presencePenalty: 0.3,
          frequencyPenalty: 0.2,
          logitBias: { [story.greedy_ids[1]!]: 1 },
        }),
      );
    const first = await sample(11);
    expect(await sample(11)).toBe(first);
    const others = [];
    for (const seed of [12, 13, 14]) others.push(await sample(seed));
    expect(new Set([first, ...others]).size).toBeGreaterThan(1);
    // Each step is seeded by its position: a reply is not one token over and over.
    expect(new Set(first.split(/\s+/)).size).toBeGreaterThan(3);
  });

  it('constrains with a GBNF grammar in the sampler, greedy and sampled, and asks for it once a request', async () => {
    grammarsAsked.length = 0;
    const greedy = await generate({ constraint: DIGIT });
    expect(tokens(greedy)).toMatch(/^\{"n": [0-9]\}$/);
    expect(greedy.choices[0]!.finishReason).toBe('stop');
    for (const seed of [1, 2, 3]) {
      expect(tokens(await generate({ constraint: DIGIT, temperature: 1.5, seed }))).toMatch(/^\{"n": [0-9]\}$/);
    }
    // Two greedy choices share the first draw, drawn on one sequence: the other's grammar catches up with it.
    const two = await generate({ constraint: DIGIT, n: 2 });
    expect(two.choices.map((c) => c.text)).toEqual([tokens(greedy), tokens(greedy)]);
    expect(grammarsAsked).toEqual([DIGIT, DIGIT, DIGIT, DIGIT, DIGIT]);
  });

  it('never draws a control token under a grammar, whatever its bias, as the logits path never does', async () => {
    // llama.cpp's grammar matches a token by its text: `<|im_start|>` (tiny-chat's id 1) fits inside a JSON string.
    const request: Partial<ChatRequest> = {
      constraint: { type: 'json', schema: { type: 'object' } },
      logitBias: { 1: 100 },
      maxTokens: 24,
    };
    const native = await generate({ ...request, logprobs: 0 });
    const reference = await generate({ ...request, logprobs: 1 });
    expect(native.choices[0]!.logprobs!.map((l) => l.token)).not.toContain('<|im_start|>');
    expect(native.choices[0]!.text).toBe(reference.choices[0]!.text);
    expect(grammarsAsked.at(-1)).toEqual(request.constraint);
  });

  it("answers a schema whose GBNF llama.cpp's parser would refuse, on the logits path", async () => {
    // `minLength: 2500` is a repetition `{2500}`, past the 2,000 llama.cpp's parser takes: no GBNF, the mask instead.
    const constraint: OutputConstraint = {
      type: 'json',
      schema: { type: 'object', properties: { s: { type: 'string', minLength: 2500 } }, required: ['s'] },
    };
    const result = await generate({ constraint, maxTokens: 8 });
    expect(result.choices[0]).toMatchObject({ finishReason: 'length' });
    expect(result.choices[0]!.text).toMatch(/^\{"s":"/);
  });

  it("reports a drawn token's logprob natively as the logits path does, greedy and sampled, biased and penalised", async () => {
    const requests: Partial<ChatRequest>[] = [
      { maxTokens: 12 },
      { maxTokens: 12, temperature: 0.7, seed: 3, logitBias: { [story.greedy_ids[2]!]: 3 }, presencePenalty: 1 },
    ];
    for (const request of requests) {
      const native = (await generate({ ...request, logprobs: 0 })).choices[0]!;
      const onLogits = (await generate({ ...request, logprobs: 1 })).choices[0]!;
      expect(native.text).toBe(onLogits.text);
      expect(native.logprobs!.map((l) => l.topLogprobs)).toEqual(native.logprobs!.map(() => []));
      native.logprobs!.forEach((entry, i) => {
        const reference = onLogits.logprobs![i]!;
        expect([entry.token, entry.bytes]).toEqual([reference.token, reference.bytes]);
        expect(entry.logprob).toBeCloseTo(reference.logprob, 3);
      });
    }
    // Drawn natively: such a row speculates (a row on the logits path does not), its logprobs the same.
    const predicted = await generate({ maxTokens: 12, logprobs: 0, prediction: story.greedy_text });
    expect(predicted.usage.acceptedPredictionTokens).toBeGreaterThan(5);
    const alone = await generate({ maxTokens: 12, logprobs: 0 });
    // The same tokens, and log probabilities to float rounding: a speculated step evaluates several positions in one
    // pass, whose matrix products round differently on some CPUs' kernels (2e-7 seen) than one position a pass.
    const entries = (result: typeof alone) => result.choices[0]!.logprobs!;
    expect(entries(predicted).map((e) => [e.token, e.bytes])).toEqual(entries(alone).map((e) => [e.token, e.bytes]));
    entries(predicted).forEach((entry, i) => expect(entry.logprob).toBeCloseTo(entries(alone)[i]!.logprob, 5));
  });

  it('speculates on a native row with penalties: the same reply as without a prediction', async () => {
    const request = { presencePenalty: 0.4, frequencyPenalty: 0.3 };
    const plain = tokens(await generate(request));
    const guided = await generate({ ...request, prediction: plain });
    expect(tokens(guided)).toBe(plain);
    expect(guided.usage.acceptedPredictionTokens).toBeGreaterThan(10);
  });
});

/** The model's end token (its config's), which a bias of +100 makes certain. */
function endTokens(): number[] {
  const config = JSON.parse(readFileSync(`${BUNDLED_MODELS}/tiny-chat/config.json`, 'utf8')) as {
    eos_token_id: number;
  };
  return [config.eos_token_id];
}
