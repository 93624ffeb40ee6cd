import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type LoadProgress, type ModelCandidate, type ModelProfile } from '../src/index.ts';
import {
  BUNDLED_MODELS,
  reference,
  sdkClient,
  type ChatReference,
  type EmbedReference,
  type SdkClient,
} from './support/lantern.ts';

/**
 * Fallback chains and model limits in Node, through the openai SDK on real inference (onnxruntime-node): a first
 * candidate that fails to load (weights that are not ONNX, as a corrupt download leaves them) hands over to the next
 * within the process, for chat and embeddings alike; and an embedding model's trained input length is a limit that is
 * answered 400, never a silent truncation.
 */
const chatRef = reference<ChatReference[]>('tiny-chat')[0]!;
const embedRefs = reference<EmbedReference[]>('tiny-embed');
/** The cap given to the embedding model: the token count of the first reference text. */
const cap = embedRefs[0]!.input_ids.length;

let folder: string;
let client: SdkClient['client'];
const progress: LoadProgress[] = [];

/** A copy of a bundled model whose weights file is not an ONNX model: it fails inside onnxruntime's session creation. */
function corruptCopy(name: string): string {
  const copy = join(folder, `corrupt-${name}`);
  cpSync(join(BUNDLED_MODELS, name), copy, { recursive: true });
  writeFileSync(join(copy, 'onnx', 'model.onnx'), 'not an ONNX model');
  return copy;
}

const cpu = (model: string, extra: Partial<ModelCandidate> = {}): ModelCandidate =>
  ({ engine: 'transformers', model, dtype: 'fp32', device: 'cpu', ...extra }) as ModelCandidate;

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'lantern-chains-'));
  const profile: ModelProfile = {
    'crimson-falcon-4': {
      task: 'chat',
      created: 1,
      candidates: [cpu(corruptCopy('tiny-chat')), cpu(`${BUNDLED_MODELS}/tiny-chat`)],
    },
    'jade-mole-4': {
      task: 'embeddings',
      created: 1,
      candidates: [cpu(corruptCopy('tiny-embed')), cpu(`${BUNDLED_MODELS}/tiny-embed`, { maxInputTokens: cap })],
    },
  };
  ({ client } = await sdkClient({ engine: createEngine({ profile, onProgress: (p) => progress.push(p) }) }));
});

afterAll(() => rmSync(folder, { recursive: true, force: true }));

const outcomes = (model: string) =>
  progress
    .filter((p) => p.model === model && (p.status === 'failed' || p.status === 'ready'))
    .map((p) => (p.status === 'failed' ? `failed ${p.candidate}` : `ready ${p.status === 'ready' && p.resolved}`));

describe('a fallback chain in Node', () => {
  it('answers the first chat request from the second candidate when the first fails to load', async () => {
    const completion = await client.chat.completions.create({
      model: 'crimson-falcon-4',
      messages: chatRef.messages,
      temperature: 0,
    });
    expect(completion.choices[0]!.message.content).toBe(chatRef.greedy_text);
    expect(outcomes('crimson-falcon-4')).toEqual([
      `failed transformers:${folder}/corrupt-tiny-chat@fp32/cpu`,
      `ready transformers:${BUNDLED_MODELS}/tiny-chat@fp32/cpu`,
    ]);
    const failed = progress.find((p) => p.status === 'failed')!;
    expect(failed).toMatchObject({ reason: expect.stringMatching(/.+/) });
  });

  it('answers the first embeddings request from the second candidate when the first fails to load', async () => {
    const response = await client.embeddings.create({
      model: 'jade-mole-4',
      input: embedRefs[0]!.text,
      encoding_format: 'float',
    });
    expect(response.data[0]!.embedding).toHaveLength(embedRefs[0]!.embedding.length);
    expect(outcomes('jade-mole-4')).toEqual([
      `failed transformers:${folder}/corrupt-tiny-embed@fp32/cpu`,
      `ready transformers:${BUNDLED_MODELS}/tiny-embed@fp32/cpu`,
    ]);
  });
});

describe("an embedding model's trained input length", () => {
  it('refuses an input over the cap with 400 context_length_exceeded, and answers one at the cap', async () => {
    const atCap = await client.embeddings.create({ model: 'jade-mole-4', input: embedRefs[0]!.text });
    expect(atCap.usage.prompt_tokens).toBe(cap);
    const over = await client.embeddings
      .create({ model: 'jade-mole-4', input: ['fine', `${embedRefs[0]!.text} cat`] })
      .catch((e: unknown) => e);
    expect(over).toBeInstanceOf(OpenAI.BadRequestError);
    expect(over).toMatchObject({
      status: 400,
      code: 'context_length_exceeded',
      param: 'input',
      message: expect.stringMatching(new RegExp(`maximum input length is ${cap} tokens, but input\\[1\\] has`)),
    });
  });
});
