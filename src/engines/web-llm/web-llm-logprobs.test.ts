import { describe, expect, it } from 'vitest';
import { chatRequest } from '../../../test/support/chat-request.ts';
import { loadedWebLLM as loaded } from '../../../test/support/fake-web-llm.ts';
import type { ChatRequest } from '../../engine-interface/index.ts';
import { LogprobRecorder } from './web-llm-logprobs.ts';
import { webLLMPipeline } from './web-llm-pipeline.ts';

const request = (overrides: Partial<ChatRequest> = {}) =>
  chatRequest({ messages: [{ role: 'user', content: 'Hello there' }], temperature: 0.7, ...overrides });

describe('the log-probability recorder in web-llm', () => {
  it('runs only in a generation that asks for log probabilities: no copy of the logits otherwise', async () => {
    const { model, fake } = await loaded();
    const plain = await model.generate(request());
    expect(plain.choices[0]!.logprobs).toBeUndefined();
    expect(fake.logitCopies).toBe(0);
    expect(fake.pipeline.logitProcessor).toBeUndefined();

    const asked = await model.generate(request({ logprobs: 2 }));
    expect(asked.choices[0]!.logprobs).toHaveLength(10);
    // Each sampled token's step: the ten of the reply and its end.
    expect(fake.logitCopies).toBe(11);

    await model.generate(request({ seed: 3 }));
    expect(fake.logitCopies).toBe(11);
  });

  it("does not run in a thinking generation: the thought's tokens are read from web-llm's output ids", async () => {
    const { model, fake } = await loaded('Qwen3-0.6B-q4f16_1-MLC');
    await model.generate(request());
    fake.reply = () => ['<think>', '\nHm.\n', '</think>', '\n\n', 'Hi', '.'];
    const thought = await model.generate(request({ thinking: true }));
    expect(thought.choices[0]).toEqual({ text: 'Hi.', reasoning: 'Hm.', finishReason: 'stop' });
    // <think>, \n, H, m, ., \n, </think>: each token the model drew while thinking, as the core's pipeline counts them.
    expect(thought.usage.reasoningTokens).toBe(7);
    // Not one step's logits left the GPU, at load (the empty thinking block's count) or in either generation.
    expect(fake.logitCopies).toBe(0);
    // Asked for log probabilities, a thinking reply reads them: the answer's tokens get theirs (the pipeline's rule).
    const asked = await model.generate(request({ thinking: true, logprobs: 1 }));
    expect(asked.choices[0]!.logprobs!.map((l) => l.token)).toEqual(['H', 'i', '.']);
    expect(fake.logitCopies).toBeGreaterThan(0);
  });

  it('is found in the pipeline of the loaded model only', async () => {
    const { fake } = await loaded();
    expect(webLLMPipeline(fake, fake.modelId)).toBe(fake.pipeline);
    expect(webLLMPipeline(fake, 'another-model')).toBeUndefined();
    expect(webLLMPipeline({}, fake.modelId)).toBeUndefined();
    expect(webLLMPipeline({ loadedModelIdToPipeline: new Map([[fake.modelId, {}]]) }, fake.modelId)).toBeUndefined();
  });
});

describe('LogprobRecorder', () => {
  const words = { text: (t: number) => `t${t}`, bytes: () => new Uint8Array() };
  it("reports each token under the request's logit_bias and penalties (Lantern's sampler's), masked tokens left out", () => {
    const recorder = new LogprobRecorder();
    recorder.begin({
      top: 3,
      temperature: 0,
      logitBias: { 2: 1 },
      presencePenalty: 0.5,
      frequencyPenalty: 0.25,
      words,
    });
    const step = (token: number) => {
      recorder.processLogits(Float32Array.of(0, 0, 0, -3.4e38));
      recorder.processSampledToken(token);
    };
    step(0);
    step(0);
    const [first, second] = recorder.take();
    // First: token 2 has its bias. Second: token 0, generated once, has lost 0.5 + 0.25.
    const logZ1 = Math.log(2 + Math.E);
    expect(first!.logprob).toBeCloseTo(-logZ1, 6);
    expect(first!.topLogprobs.map((e) => e.token)).toEqual(['t2', 't0', 't1']);
    const logZ2 = Math.log(Math.exp(-0.75) + 1 + Math.E);
    expect(second!.logprob).toBeCloseTo(-0.75 - logZ2, 6);
    expect(second!.topLogprobs.map((e) => e.token)).toEqual(['t2', 't1', 't0']);
  });
});
