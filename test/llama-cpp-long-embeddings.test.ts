import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadEmbeddingModel } from '../src/engines/llama-cpp/node-llama-runtime.ts';
import { TaskQueue } from '../src/engines/task-queue.ts';
import { BUNDLED_MODELS } from './support/lantern.ts';

/**
 * llama.cpp embeddings in Node past 512 tokens, on a long-input variant of the bundled embeddings model (its GGUF with
 * 1,024 positions, made here by scripts/fixtures/bert_gguf.py with Debian's numpy and onnx; skipped without them).
 * node-llama-cpp read a longer input in batches of 512, and a BERT-type model keeps nothing between batches, so the
 * vector was the last batch's: two inputs that differed in their first 200 tokens were bit-identical (issue 63).
 */
const folder = mkdtempSync(join(os.tmpdir(), 'lantern-long-embed-'));
const made = spawnSync(
  '/usr/bin/python3',
  [
    fileURLToPath(new URL('../scripts/fixtures/bert_gguf.py', import.meta.url)),
    `${BUNDLED_MODELS}/tiny-embed`,
    join(folder, 'tiny-embed-long.gguf'),
    '--positions',
    '1024',
  ],
  { encoding: 'utf8' },
);
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe.skipIf(made.status !== 0)('llama.cpp embeddings of inputs past 512 tokens (Node)', () => {
  it('reads an input whole: inputs that differ only in their first 200 tokens embed apart', async () => {
    const model = await loadEmbeddingModel(
      { engine: 'llama.cpp', model: folder, file: 'tiny-embed-long.gguf' },
      { id: 'tiny-embed-long', queue: new TaskQueue() },
    );
    expect(model.maxInputTokens).toBe(1023);
    // Letters are one token each in its vocabulary: 200 of them, then 500 the same in both.
    const [owls, hotels] = ['a', 'b'].map((head) => `${`${head} `.repeat(200)}${'c '.repeat(500)}`.trim());
    const { embeddings, usage } = await model.embed([owls!, hotels!]);
    expect(usage.promptTokens / 2).toBeGreaterThan(700);
    expect([...embeddings[0]!]).not.toEqual([...embeddings[1]!]);
    // And the same input twice is the same vector: the difference is the inputs', not noise.
    const again = await model.embed([owls!]);
    expect([...again.embeddings[0]!]).toEqual([...embeddings[0]!]);
  });
});
