import { describe, expect, it } from 'vitest';
import { chatRequest } from '../../../test/support/chat-request.ts';
import { loadedWebLLM as loaded } from '../../../test/support/fake-web-llm.ts';
import type { ChatRequest } from '../../engine-interface/index.ts';
import { logitProcessorSlot } from './web-llm-logprobs.ts';

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

  it("runs in a thinking generation, whose thought's tokens it counts, and not in one whose thinking is off", async () => {
    const { model, fake } = await loaded('Qwen3-0.6B-q4f16_1-MLC');
    const copies = fake.logitCopies; // the load's count of the empty thinking block's tokens
    await model.generate(request());
    expect(fake.logitCopies).toBe(copies);
    fake.reply = () => ['<think>', '\nHm.\n', '</think>', '\n\n', 'Hi', '.'];
    const thought = await model.generate(request({ thinking: true }));
    expect(thought.usage.reasoningTokens).toBeGreaterThan(0);
    expect(fake.logitCopies).toBeGreaterThan(copies);
  });

  it('is found in the pipeline of the loaded model only; elsewhere it stays as web-llm loaded it', async () => {
    const { fake } = await loaded();
    expect(logitProcessorSlot(fake, fake.modelId)).toBe(fake.pipeline);
    expect(logitProcessorSlot(fake, 'another-model')).toBeUndefined();
    expect(logitProcessorSlot({}, fake.modelId)).toBeUndefined();
    expect(
      logitProcessorSlot({ loadedModelIdToPipeline: new Map([[fake.modelId, {}]]) }, fake.modelId),
    ).toBeUndefined();
  });
});
