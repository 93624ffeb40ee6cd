import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { ChatRequest, ChatResult } from '../../engine-interface/index.ts';
import { chatRequest } from '../../../test/support/chat-request.ts';
import { TransformersChatModel, type ChatModelOptions } from './chat-model.ts';

/**
 * What the transformers.js batch declares of a model's cache, on the bundled tiny-chat (attention alone) and
 * tiny-hybrid (LFM2: short convolutions beside attention): a hybrid's state cannot be cut back, padded, nor take
 * tokens back, so it is reused from checkpoints, runs one request at a time, and never speculates.
 */
const MODELS = fileURLToPath(new URL('../../../public/models', import.meta.url));
const HYBRID = `${MODELS}/tiny-hybrid`;
const HAS_HYBRID = existsSync(`${HYBRID}/onnx/model.onnx`);

const load = (folder: string, options: Partial<ChatModelOptions> = {}) =>
  TransformersChatModel.load(folder, { id: 'tiny', device: 'cpu', dtype: 'fp32', ...options });

const ask = (content: string, overrides: Partial<ChatRequest> = {}) =>
  chatRequest({ messages: [{ role: 'user', content }], maxTokens: 40, ...overrides });

const text = (result: ChatResult) => result.choices.map((c) => c.text);

describe.skipIf(!HAS_HYBRID)('TransformersBatch on a hybrid model', () => {
  it('speculates nothing on a hybrid (no retract), where tiny-chat’s prompt lookup proposes', async () => {
    // A prompt whose answer repeats it: tiny-chat's prompt lookup then has n-grams to propose.
    const request = ask('1, 2, 3, 4, 5, 6, 7, 8, 9, 10. Count to 10.');
    const [plain, hybrid] = [await load(`${MODELS}/tiny-chat`), await load(HYBRID)];
    await plain.generate(request);
    expect(plain.stats.proposedTokens).toBeGreaterThan(0);
    await hybrid.generate(request);
    expect(hybrid.stats.proposedTokens).toBe(0);
  });

  it('answers requests sent together as it answers each alone (one at a time, its n rows together)', async () => {
    const model = await load(HYBRID);
    const requests = [
      ask('Count to 10.'),
      ask('Spell cat.', { n: 2, temperature: 0.9, seed: 4 }),
      ask('Tell me a story.', { temperature: 0.7, seed: 9 }),
    ];
    const alone = [];
    for (const request of requests) alone.push(text(await model.generate(request)));
    const together = await Promise.all(requests.map((request) => model.generate(request)));
    expect(together.map(text)).toEqual(alone);
  });

  it('refuses a hybrid as a draft model: a draft takes back what its target refused', async () => {
    await expect(load(`${MODELS}/tiny-chat`, { draft: HYBRID })).rejects.toThrow(/recurrent state/);
  });
});
