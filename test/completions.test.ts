import { AutoModelForCausalLM, AutoTokenizer, type Tensor } from '@huggingface/transformers';
import OpenAI from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ModelProfile } from '../src/index.ts';
import { sdkRefusal } from './support/api-error.ts';
import {
  DIRECT,
  HAS_STORIES_260K,
  reference,
  sdkClient,
  STORIES_260K,
  testProfile,
  type ChatReference,
  type SdkClient,
} from './support/lantern.ts';

/**
 * `POST /v1/completions` through the official openai SDK (`completions.create`), on real inference: a raw prompt is
 * continued as it is, without the chat template, in the shapes openai-node reads (`text_completion` objects and
 * chunks, the legacy `logprobs`).
 */
const refs = reference<ChatReference[]>('tiny-chat');
const count = refs.find((r) => r.messages.at(-1)!.content === 'Count to 10.')!;
/** tiny-chat's chat template, written out by hand: what the chat route renders for one user message. */
const templated = (content: string) => `<|im_start|>user\n${content}<|im_end|>\n<|im_start|>assistant\n`;

let client: SdkClient['client'];
/** What reached the engine, to check that each prompt is its own raw request. */
let calls: SdkClient['calls'];

beforeAll(async () => {
  const stories: ModelProfile = {
    'stories-260k': {
      task: 'chat',
      created: 0,
      candidates: [{ engine: 'transformers', model: STORIES_260K, dtype: 'fp32', device: 'cpu' }],
    },
  };
  const profile: ModelProfile = { ...testProfile(), ...(HAS_STORIES_260K && stories) };
  ({ client, calls } = await sdkClient({ profile }));
});

describe('POST /v1/completions', () => {
  it('continues the prompt as it is: the chat template written out gives the chat reply, the bare text does not', async () => {
    const raw = await client.completions.create({
      model: 'crimson-falcon-4',
      prompt: templated('Count to 10.'),
      temperature: 0,
      max_tokens: 64,
    });
    expect(raw).toMatchObject({ object: 'text_completion', model: 'crimson-falcon-4' });
    expect(raw.id).toMatch(/^cmpl-/);
    expect(raw.system_fingerprint).toMatch(/^fp_/);
    expect(raw.choices).toEqual([{ index: 0, text: count.greedy_text, logprobs: null, finish_reason: 'stop' }]);
    // The same tokens as the chat template's: the prompt is tokenized as is, with no template around it.
    expect(raw.usage).toMatchObject({
      prompt_tokens: count.input_ids.length,
      completion_tokens: count.greedy_ids.length,
      total_tokens: count.input_ids.length + count.greedy_ids.length,
    });
    expect(calls.at(-1)!.request).toMatchObject({ messages: [], prompt: templated('Count to 10.') });

    const bare = await client.completions.create({ model: 'crimson-falcon-4', prompt: 'Count to 10.', temperature: 0 });
    expect(bare.choices[0]!.text).not.toBe(count.greedy_text);
    expect(bare.usage!.prompt_tokens).toBeLessThan(count.input_ids.length);
  });

  it('stops at max_tokens (16 by default, as the legacy API) with finish_reason "length"', async () => {
    const cut = await client.completions.create({
      model: 'crimson-falcon-4',
      prompt: templated('Count to 10.'),
      temperature: 0,
      max_tokens: 3,
    });
    expect(cut.choices[0]!.finish_reason).toBe('length');
    expect(count.greedy_text.startsWith(cut.choices[0]!.text)).toBe(true);
    expect(cut.choices[0]!.text.length).toBeLessThan(count.greedy_text.length);
    expect(cut.usage!.completion_tokens).toBe(3);
    const unbounded = await client.completions.create({
      model: 'crimson-falcon-4',
      prompt: templated('Count to 10.'),
      temperature: 0,
    });
    expect(unbounded.usage!.completion_tokens).toBe(16);
    expect(unbounded.choices[0]!.finish_reason).toBe('length');
  });

  it('echoes the prompt before the completion, streamed or not', async () => {
    const prompt = templated('Count to 10.');
    const echoed = await client.completions.create({
      model: 'crimson-falcon-4',
      prompt,
      echo: true,
      temperature: 0,
      max_tokens: 64,
    });
    expect(echoed.choices[0]!.text).toBe(prompt + count.greedy_text);

    const stream = await client.completions.create({
      model: 'crimson-falcon-4',
      prompt,
      echo: true,
      temperature: 0,
      max_tokens: 64,
      stream: true,
    });
    const texts: string[] = [];
    for await (const chunk of stream) texts.push(chunk.choices[0]?.text ?? '');
    expect(texts[0]).toBe(prompt);
    expect(texts.join('')).toBe(prompt + count.greedy_text);
  });

  it('streams text_completion chunks, one per token, a finish_reason, then usage when asked', async () => {
    const stream = await client.completions.create({
      model: 'crimson-falcon-4',
      prompt: templated('Count to 10.'),
      temperature: 0,
      max_tokens: 64,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const ids = new Set(chunks.map((c) => c.id));
    expect(ids.size).toBe(1);
    expect([...ids][0]).toMatch(/^cmpl-/);
    expect(chunks.every((c) => c.object === 'text_completion' && c.model === 'crimson-falcon-4')).toBe(true);
    const withChoices = chunks.filter((c) => c.choices.length > 0);
    expect(withChoices.map((c) => c.choices[0]!.text).join('')).toBe(count.greedy_text);
    // One chunk per token but the end of the reply, which has no text, then the finish.
    expect(withChoices).toHaveLength(count.greedy_ids.length);
    expect(withChoices.at(-1)!.choices[0]).toMatchObject({ text: '', finish_reason: 'stop' });
    expect(withChoices.slice(0, -1).every((c) => c.choices[0]!.finish_reason === null && c.usage === null)).toBe(true);
    expect(chunks.at(-1)).toMatchObject({
      choices: [],
      usage: { prompt_tokens: count.input_ids.length, completion_tokens: count.greedy_ids.length },
    });
  });

  it('answers an array of prompts with n choices each, choice p × n + i for choice i of prompt p', async () => {
    const prompts = [templated('Count to 10.'), 'Once upon a time'];
    const answer = await client.completions.create({
      model: 'crimson-falcon-4',
      prompt: prompts,
      n: 2,
      temperature: 0,
      max_tokens: 8,
    });
    expect(answer.choices.map((c) => c.index)).toEqual([0, 1, 2, 3]);
    expect(answer.choices[0]!.text).toBe(answer.choices[1]!.text);
    expect(answer.choices[0]!.text).toBe(count.greedy_text.slice(0, answer.choices[0]!.text.length));
    expect(calls.slice(-2).map((c) => [c.request.prompt, c.request.n])).toEqual([
      [prompts[0], 2],
      [prompts[1], 2],
    ]);
    const each = await Promise.all(
      prompts.map((prompt) =>
        client.completions.create({ model: 'crimson-falcon-4', prompt, temperature: 0, max_tokens: 8 }),
      ),
    );
    expect(answer.choices[2]!.text).toBe(each[1]!.choices[0]!.text);
    expect(answer.usage).toMatchObject({
      prompt_tokens: each[0]!.usage!.prompt_tokens + each[1]!.usage!.prompt_tokens,
      completion_tokens: 2 * (each[0]!.usage!.completion_tokens + each[1]!.usage!.completion_tokens),
      total_tokens: answer.usage!.prompt_tokens + answer.usage!.completion_tokens,
    });

    const stream = await client.completions.create({
      model: 'crimson-falcon-4',
      prompt: prompts,
      n: 2,
      temperature: 0,
      max_tokens: 8,
      stream: true,
    });
    const texts = ['', '', '', ''];
    const finishes: (string | null)[] = [null, null, null, null];
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        texts[choice.index] += choice.text;
        if (choice.finish_reason) finishes[choice.index] = choice.finish_reason;
      }
    }
    expect(texts).toEqual(answer.choices.map((c) => c.text));
    expect(finishes).toEqual(answer.choices.map((c) => c.finish_reason));
  });

  it('stops at a stop sequence, which is not part of the text', async () => {
    const stop = count.greedy_text.slice(4, 7);
    const answer = await client.completions.create({
      model: 'crimson-falcon-4',
      prompt: templated('Count to 10.'),
      temperature: 0,
      stop,
    });
    expect(answer.choices[0]).toMatchObject({ text: count.greedy_text.split(stop)[0], finish_reason: 'stop' });
  });

  it('reports logprobs in the legacy shape: tokens, their log probabilities, the top ones and text offsets', async () => {
    for (const stream of [false, true]) {
      const choice = stream
        ? await streamedChoice({ prompt: templated('Count to 10.'), logprobs: 2, max_tokens: 64, temperature: 0 })
        : (
            await client.completions.create({
              model: 'crimson-falcon-4',
              prompt: templated('Count to 10.'),
              logprobs: 2,
              max_tokens: 64,
              temperature: 0,
            })
          ).choices[0]!;
      const { tokens, token_logprobs, top_logprobs, text_offset } = choice.logprobs!;
      expect(choice.text).toBe(count.greedy_text);
      // The end-of-reply token has no text and no entry, as in the chat API.
      expect(tokens).toHaveLength(count.greedy_ids.length - 1);
      expect(tokens!.join('')).toBe(choice.text);
      expect(text_offset).toEqual(tokens!.map((_, i) => tokens!.slice(0, i).join('').length));
      tokens!.forEach((token, i) => {
        const top = top_logprobs![i]!;
        expect(Object.keys(top).length).toBeGreaterThanOrEqual(1);
        expect(Object.keys(top).length).toBeLessThanOrEqual(3);
        expect(top[token]).toBe(token_logprobs![i]);
        // Greedy: the token taken is the most likely one.
        expect(Math.max(...Object.values(top))).toBe(token_logprobs![i]);
      });
    }
  });

  it.skipIf(!HAS_STORIES_260K)(
    'is what transformers.js generates from the tokenized text, BOS and all (stories260K)',
    async () => {
      const prompt = 'Once upon a time, there was a dog';
      const tokenizer = await AutoTokenizer.from_pretrained(STORIES_260K);
      const model = await AutoModelForCausalLM.from_pretrained(STORIES_260K, DIRECT);
      const inputs = tokenizer(prompt) as { input_ids: Tensor };
      const output = (await model.generate({ ...inputs, max_new_tokens: 40, do_sample: false })) as Tensor;
      const length = inputs.input_ids.dims.at(-1)!;
      const generated = (output.tolist() as bigint[][])[0]!.slice(length).map(Number);
      const answer = await client.completions.create({ model: 'stories-260k', prompt, temperature: 0, max_tokens: 40 });
      expect(answer.choices[0]!.text).toBe(tokenizer.decode(generated, { skip_special_tokens: true }));
      expect(answer.usage).toMatchObject({ prompt_tokens: length, completion_tokens: generated.length });
      expect(Number((inputs.input_ids.data as BigInt64Array)[0])).toBe(tokenizer.bos_token_id); // the tokenizer's BOS
    },
  );

  it('refuses what it cannot do with a 400 naming the parameter', async () => {
    const refused = async (body: Record<string, unknown>) => {
      const { status, param } = await sdkRefusal(
        client.completions.create({
          model: 'crimson-falcon-4',
          prompt: 'hi',
          ...body,
        } as OpenAI.CompletionCreateParamsNonStreaming),
      );
      expect(status).toBe(400);
      return param;
    };
    expect(await refused({ prompt: [1, 2, 3] })).toBe('prompt');
    expect(await refused({ prompt: undefined })).toBe('prompt');
    expect(await refused({ suffix: 'after' })).toBe('suffix');
    expect(await refused({ best_of: 3 })).toBe('best_of');
    expect(await refused({ echo: true, logprobs: 1 })).toBe('echo');
    expect(await refused({ logprobs: 6 })).toBe('logprobs');
    expect(await refused({ max_tokens: 0 })).toBe('max_tokens');
    expect(await refused({ prompt: ['a', 'b', 'c'], n: 3 })).toBe('n');
    expect(await refused({ temperature: 3 })).toBe('temperature');
    expect(await refused({ stream_options: { include_usage: true } })).toBe('stream_options');
    // Accepted as what every request does: best_of equal to n, an empty suffix.
    await client.completions.create({ model: 'crimson-falcon-4', prompt: 'hi', best_of: 1, suffix: '', max_tokens: 1 });

    const wrongModel = await client.completions.create({ model: 'jade-mole-4', prompt: 'hi' }).catch((e: unknown) => e);
    expect(wrongModel).toBeInstanceOf(OpenAI.NotFoundError);
    const tooLong = await client.completions
      .create({ model: 'crimson-falcon-4', prompt: 'hi '.repeat(2000), max_tokens: 10 })
      .catch((e: unknown) => e);
    expect(tooLong).toMatchObject({ status: 400, code: 'context_length_exceeded', param: 'prompt' });
  });
});

async function streamedChoice(body: Omit<OpenAI.CompletionCreateParamsStreaming, 'model' | 'stream'>) {
  const stream = await client.completions.create({ model: 'crimson-falcon-4', ...body, stream: true });
  const choice = {
    text: '',
    logprobs: {
      tokens: [] as string[],
      token_logprobs: [] as number[],
      top_logprobs: [] as Record<string, number>[],
      text_offset: [] as number[],
    },
  };
  for await (const chunk of stream) {
    const delta = chunk.choices[0];
    if (!delta) continue;
    choice.text += delta.text;
    choice.logprobs.tokens.push(...(delta.logprobs?.tokens ?? []));
    choice.logprobs.token_logprobs.push(...(delta.logprobs?.token_logprobs ?? []));
    choice.logprobs.top_logprobs.push(...(delta.logprobs?.top_logprobs ?? []));
    choice.logprobs.text_offset.push(...(delta.logprobs?.text_offset ?? []));
  }
  return choice;
}
