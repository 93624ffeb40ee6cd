import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type ModelProfile } from '../src/index.ts';
import { ggufParts } from '../src/engines/llama-cpp/llama-cpp-engine.ts';
import { chatRequest } from './support/chat-request.ts';
import { BUNDLED_MODELS, reference, type ChatReference } from './support/lantern.ts';

/**
 * A llama.cpp candidate names a split GGUF (llama.cpp's `gguf-split` format) by its first part, and llama.cpp reads the
 * other parts beside it: the bundled tiny-chat, split by scripts/fixtures/gguf_convert.py exactly as
 * `gguf-split --split-max-tensors` splits its single GGUF, answers the reference conversations as the transformers.js
 * model does, and a part missing fails the load, saying which candidate.
 */

/** The converter needs onnx and numpy, which Debian's python3 has here (python3-onnx); without them the test skips. */
const PYTHON = '/usr/bin/python3';
const CAN_CONVERT = spawnSync(PYTHON, ['-c', 'import onnx, numpy'], { stdio: 'ignore' }).status === 0;
if (!CAN_CONVERT)
  console.warn(`[lantern tests] ${PYTHON} cannot import onnx and numpy: the split GGUF test is skipped.`);

const CONVERTER = fileURLToPath(new URL('../scripts/fixtures/gguf_convert.py', import.meta.url));
/** Tensors a part: tiny-chat has 39 (2 layers of 9, the embeddings, the final norm, the LM head), so 3 parts. */
const TENSORS_A_PART = 16;

const only = (folder: string, file: string): ModelProfile => ({
  m: { task: 'chat', created: 0, candidates: [{ engine: 'llama.cpp', model: folder, file }] },
});

describe.skipIf(!CAN_CONVERT)('a split GGUF on llama.cpp', () => {
  let scratch: string;
  /** The folder the converter wrote the parts to, and the first part's name. */
  let folder: string;
  let first: string;

  beforeAll(() => {
    scratch = mkdtempSync(path.join(tmpdir(), 'lantern-gguf-split-'));
    folder = path.join(scratch, 'split');
    execFileSync(
      PYTHON,
      [
        CONVERTER,
        path.join(BUNDLED_MODELS, 'tiny-chat'),
        path.join(folder, 'tiny-chat-f32.gguf'),
        '--split-max-tensors',
        String(TENSORS_A_PART),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    first = readdirSync(folder).find((name) => name.includes('-00001-of-'))!;
  });
  afterAll(() => {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('writes the parts under the names the engine lists for its first part', () => {
    // The engine downloads exactly `ggufParts(file)` of a hub candidate; the converter names them as gguf-split does.
    expect(first).toMatch(/^tiny-chat-f32-00001-of-\d{5}\.gguf$/);
    const parts = ggufParts(first);
    expect(parts.length).toBeGreaterThanOrEqual(3);
    expect(readdirSync(folder).sort()).toEqual(parts);
  });

  it('answers the reference conversations as the single model does', async () => {
    const engine = createEngine({ profile: only(folder, first) });
    for (const ref of reference<ChatReference[]>('tiny-chat')) {
      const result = await engine.chat('m', chatRequest({ messages: ref.messages }));
      // Greedy decoding of the same f32 weights: the transformers.js model's text, token for token, ending on EOS.
      expect(result.choices, JSON.stringify(ref.messages)).toMatchObject([
        { text: ref.greedy_text, finishReason: 'stop' },
      ]);
    }
  });

  it('fails to load, naming the candidate, when a part is missing', async () => {
    // A copy of the parts but the second: the first part's split.count still says there are more.
    const broken = path.join(scratch, 'broken');
    cpSync(folder, broken, { recursive: true });
    const missing = ggufParts(first)[1]!;
    rmSync(path.join(broken, missing));
    const engine = createEngine({ profile: only(broken, first) });
    const error = (await engine.chat('m', chatRequest()).catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({ kind: 'load_failed' });
    // The router's message when the only candidate fails: the model, then the candidate by its public name and why,
    // which names the part that is missing.
    expect(error.message).toContain('Model `m` could not be loaded on this device.');
    expect(error.message).toContain(`llama.cpp:broken/${first}`);
    expect(error.message).toContain(missing);
  });
});
