import { existsSync, readFileSync } from 'node:fs';
import type OpenAI from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ModelProfile } from '../src/index.ts';
import { BUNDLED_MODELS, sdkClient } from './support/lantern.ts';

/**
 * Prefix reuse on a hybrid model (the bundled tiny-hybrid: LFM2's short convolutions beside attention layers, with
 * tiny-chat's tokenizer), whose cache holds a state of the whole sequence that cannot be cut back to a prefix: a
 * prompt reuses only a cached state it extends whole (a finished reply's, or a checkpoint kept while a prompt was
 * prefilled: its end, its newest turn's start). Through the openai SDK, every answer must be exactly that of the same
 * model computing each prompt from nothing, and `usage.prompt_tokens_details.cached_tokens` must say what was reused.
 * Before, transformers.js named a hybrid's states as keys and values and laid them out along a sequence axis they do
 * not have, and kept nothing of such a model for reuse.
 *
 * Each engine that runs the fixture is a line of ENGINES: the same conversation runs on each.
 */
type Message = OpenAI.ChatCompletionMessageParam;
type Params = Omit<OpenAI.ChatCompletionCreateParamsNonStreaming, 'model'>;

const MODEL = 'hybrid';
const HYBRID = `${BUNDLED_MODELS}/tiny-hybrid`;

interface EngineCase {
  name: string;
  /** Whether its copy of the fixture is here. */
  run: boolean;
  /**
   * Decimal digits its log probabilities agree to with and without reuse: llama.cpp's matrix products round
   * differently for a prompt evaluated in other pieces (3e-4 seen), transformers.js' to float rounding.
   */
  digits: number;
  /** Whether its checkpoints are copies of their own, which outlive what their sequence goes on to hold. */
  keepsCopies: boolean;
  /** Its candidate for the fixture; `reuse` false: one that computes every prompt from nothing. */
  candidate: (reuse: boolean) => ModelProfile[string]['candidates'][number];
}

const ENGINES: EngineCase[] = [
  {
    name: 'transformers.js',
    run: existsSync(`${HYBRID}/onnx/model.onnx`),
    digits: 4,
    keepsCopies: true,
    candidate: (reuse) => ({
      engine: 'transformers',
      model: HYBRID,
      dtype: 'fp32',
      device: 'cpu',
      ...(!reuse && { prefixCacheBytes: 0 }),
    }),
  },
  {
    name: 'llama.cpp (node-llama-cpp: its context checkpoints)',
    run: existsSync(`${HYBRID}/gguf/tiny-hybrid-f32.gguf`),
    digits: 2,
    keepsCopies: false,
    candidate: (reuse) => ({
      engine: 'llama.cpp',
      model: HYBRID,
      file: 'gguf/tiny-hybrid-f32.gguf',
      ...(!reuse && { prefixCacheBytes: 0 }),
    }),
  },
];

const profileOf = (candidate: EngineCase['candidate'], reuse: boolean): ModelProfile => ({
  [MODEL]: { task: 'chat', created: 0, candidates: [candidate(reuse)] },
});

const cached = (completion: OpenAI.ChatCompletion) => completion.usage?.prompt_tokens_details?.cached_tokens ?? 0;

const SYSTEM = 'You are a helpful assistant. You answer briefly, and you say so when you do not know.';

describe.each(ENGINES)('a hybrid model’s prefix reuse on $name', ({ run, candidate, digits, keepsCopies }) => {
  let reuse: OpenAI;
  let fresh: OpenAI;
  beforeAll(async () => {
    if (!run) return;
    // Twenty requests at once from one key: above the handler's default of four.
    const handler = { rateLimits: { requestsPerMinute: 1e9, concurrentGenerations: 1e9 } };
    reuse = (await sdkClient({ profile: profileOf(candidate, true), handler })).client;
    fresh = (await sdkClient({ profile: profileOf(candidate, false) })).client;
  });

  /** The request on the reusing engine, then on the fresh one: the same answer; gives the reusing engine's. */
  async function both(params: Params): Promise<OpenAI.ChatCompletion> {
    const a = await reuse.chat.completions.create({ model: MODEL, ...params });
    const b = await fresh.chat.completions.create({ model: MODEL, ...params });
    expect(a.choices.map((c) => [c.message.content, c.finish_reason])).toEqual(
      b.choices.map((c) => [c.message.content, c.finish_reason]),
    );
    // Where asked, the same log probabilities to float rounding: a state a little off (a short convolution's holds
    // only its last few inputs, so greedy text may survive it) shows here.
    const logprobs = (c: OpenAI.ChatCompletion) => c.choices.flatMap((x) => x.logprobs?.content ?? []);
    expect(logprobs(a).map((t) => t.token)).toEqual(logprobs(b).map((t) => t.token));
    logprobs(a).forEach((t, i) => expect(t.logprob).toBeCloseTo(logprobs(b)[i]!.logprob, digits));
    expect(a.usage!.prompt_tokens).toBe(b.usage!.prompt_tokens);
    expect(a.usage!.completion_tokens).toBe(b.usage!.completion_tokens);
    expect(cached(b)).toBe(0);
    expect(cached(a)).toBeLessThan(a.usage!.prompt_tokens);
    return a;
  }

  it.skipIf(!run)('answers the reference prompts as PyTorch did (the export is the model trained)', async () => {
    const references = JSON.parse(readFileSync(`${HYBRID}/reference.json`, 'utf8')) as {
      messages: Message[];
      greedy_ids: number[];
      greedy_text: string;
    }[];
    for (const reference of references) {
      const answer = await reuse.chat.completions.create({
        model: MODEL,
        messages: reference.messages,
        temperature: 0,
        max_tokens: reference.greedy_ids.length,
      });
      expect(answer.choices[0]!.message.content).toBe(reference.greedy_text);
    }
  });

  it.skipIf(!run)(
    'continues a three-turn conversation from its cached states, answering as from nothing; an edit reuses only what it shares',
    async () => {
      const messages: Message[] = [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: 'Tell me a story.' },
      ];
      const params = { temperature: 0, max_tokens: 32, logprobs: true };
      const first = await both({ messages, ...params });
      expect(cached(first)).toBe(0);
      let previous = first;
      for (const next of ['Count to 10.', 'Spell cat.']) {
        messages.push(
          { role: 'assistant', content: previous.choices[0]!.message.content },
          { role: 'user', content: next },
        );
        const answer = await both({ messages, ...params });
        // At least the previous prompt, and its reply: the state the finished row left.
        expect(cached(answer)).toBeGreaterThan(previous.usage!.prompt_tokens);
        previous = answer;
      }
      // An edit of the first user message: what it shares with the conversation is the system prompt. A state kept
      // after the edited message would be wrong; the checkpoint at the newest turn's start of the first request is not.
      const edited: Message[] = [messages[0]!, { role: 'user', content: 'Say hello.' }, ...messages.slice(2)];
      const edit = await both({ messages: edited, ...params });
      expect(cached(edit)).toBeGreaterThan(0);
      expect(cached(edit)).toBeLessThan(first.usage!.prompt_tokens);
      // The conversation itself goes on as before.
      const again = await both({ messages, ...params });
      expect(again.choices[0]!.message.content).toBe(previous.choices[0]!.message.content);
    },
  );

  it.skipIf(!run)('shares a system prompt between conversations, and a prompt asked again', async () => {
    const params = { temperature: 0, max_tokens: 24 };
    const ask = (content: string) =>
      both({
        messages: [
          { role: 'system', content: `${SYSTEM} You are kind.` },
          { role: 'user', content },
        ],
        ...params,
      });
    const first = await ask('Hi');
    // From the checkpoint at the newest turn's start, kept by each conversation's first prompt, for every later one.
    for (const question of ['Count to 10.', 'Spell cat.', 'Say hello.']) {
      const answer = await ask(question);
      expect(cached(answer)).toBeGreaterThan(first.usage!.prompt_tokens / 2);
      // Asked again at once (a regenerated reply): from the checkpoint at its end but its last token.
      const again = await ask(question);
      expect(cached(again)).toBe(again.usage!.prompt_tokens - 1);
    }
    // And later, after other conversations: where checkpoints are copies of their own (transformers.js); llama.cpp's
    // belong to a sequence, and the next conversation that starts from that sequence's system prompt cuts them.
    if (keepsCopies) {
      for (let i = 0; i < 2; i++) {
        const again = await ask('Spell cat.');
        expect(cached(again)).toBe(again.usage!.prompt_tokens - 1);
      }
    }
  });

  it.skipIf(!run)('answers n choices as from nothing, and continues either of them', async () => {
    const messages: Message[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'Count to 10.' },
    ];
    const params = { temperature: 1.1, seed: 3, n: 2, max_tokens: 24, logprobs: true };
    const first = await both({ messages, ...params });
    messages.push({ role: 'assistant', content: first.choices[1]!.message.content }, { role: 'user', content: 'Hi' });
    const second = await both({ messages, ...params });
    expect(cached(second)).toBeGreaterThan(first.usage!.prompt_tokens);
  });

  it.skipIf(!run)('streams as it answers, and after an abort answers twenty mixed requests', async () => {
    const messages: Message[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'Tell me a story.' },
    ];
    const whole = await both({ messages, temperature: 0, max_tokens: 32 });
    let streamed = '';
    const stream = await reuse.chat.completions.create({
      model: MODEL,
      messages,
      temperature: 0,
      max_tokens: 32,
      stream: true,
    });
    for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? '';
    expect(streamed).toBe(whole.choices[0]!.message.content);

    // A stream aborted after its first tokens: its rows are let go (their states kept, as an aborted row's are), and
    // nothing is left wedged.
    const controller = new AbortController();
    const aborted = await reuse.chat.completions.create(
      { model: MODEL, messages, temperature: 0.9, seed: 1, max_tokens: 200, stream: true },
      { signal: controller.signal },
    );
    let chunks = 0;
    for await (const chunk of aborted) {
      if (chunk.choices[0]?.delta.content && ++chunks === 3) {
        controller.abort();
        break;
      }
    }

    const prompts = ['Count to 10.', 'Spell cat.', 'Tell me a story.', 'Hi', 'What is 3 + 4?'];
    const requests = Array.from({ length: 20 }, (_, i) => {
      const asked: Message[] = [
        ...(i % 2 ? [{ role: 'system' as const, content: SYSTEM }] : []),
        { role: 'user', content: prompts[i % prompts.length]! },
      ];
      return reuse.chat.completions.create({
        model: MODEL,
        messages: asked,
        max_tokens: 8 + (i % 5) * 4,
        ...(i % 3 === 0 ? { temperature: 0 } : { temperature: 0.8, seed: i }),
        ...(i % 4 === 1 && { n: 2 }),
      });
    });
    const answers = await Promise.all(requests);
    for (const [i, answer] of answers.entries()) {
      expect(answer.choices).toHaveLength(i % 4 === 1 ? 2 : 1);
      for (const choice of answer.choices) expect(['stop', 'length']).toContain(choice.finish_reason);
    }
    // And the conversation still answers as from nothing.
    await both({ messages, temperature: 0, max_tokens: 32 });
  });
});
