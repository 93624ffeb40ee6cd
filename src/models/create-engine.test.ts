import { describe, expect, it } from 'vitest';
import { fakeCreate, webLLMError } from '../../test/support/fake-web-llm.ts';
import { EngineError, type LoadProgress } from '../engine-interface/index.ts';
import { createEngine } from './create-engine.ts';
import type { ModelLoaders } from '../engines/loader-registry.ts';
import type { ChatModel, EmbeddingModel } from '../engines/model-loaders.ts';
import { candidateKey, type ModelCandidate, type ModelProfile } from './model-profile.ts';
import { WebLLMChatModel } from '../engines/web-llm/web-llm-chat-model.ts';
import { chatRequest } from '../../test/support/chat-request.ts';

const request = chatRequest();

const f16: ModelCandidate = { engine: 'web-llm', model: 'SmolLM2-360M-Instruct-q4f16_1-MLC' };
const f32: ModelCandidate = { engine: 'web-llm', model: 'SmolLM2-360M-Instruct-q4f32_1-MLC' };
const gpu: ModelCandidate = { engine: 'transformers', model: 'org/tiny', dtype: 'q4', device: 'webgpu' };
const cpu: ModelCandidate = { engine: 'transformers', model: 'org/tiny', dtype: 'q4', device: 'cpu' };

const profile: ModelProfile = {
  chat: { task: 'chat', created: 1, candidates: [f16, f32, gpu, cpu] },
  'gpu-only': { task: 'chat', created: 2, candidates: [f32] },
  vectors: { task: 'embeddings', created: 3, candidates: [cpu] },
};

/**
 * Loaders whose models answer with the key of the candidate that was loaded; `failing` candidates fail to load with
 * the given error. Web-llm candidates go through the real adapter, over a fake web-llm engine.
 */
function loaders(failing: Record<string, Error> = {}) {
  const loads: string[] = [];
  const load = async (candidate: ModelCandidate): Promise<ChatModel & EmbeddingModel> => {
    const key = candidateKey(candidate);
    loads.push(key);
    if (candidate.engine === 'web-llm') {
      const create = fakeCreate(failing[key] ? { fail: failing[key] } : {});
      const model = await WebLLMChatModel.load(candidate, { id: 'chat', create });
      create.engines[0]!.reply = () => [key];
      return Object.assign(model, { embed: async () => ({ embeddings: [], usage: { promptTokens: 0 } }) });
    }
    if (failing[key]) throw failing[key];
    return {
      generate: async () => ({
        choices: [{ text: key, finishReason: 'stop' }],
        usage: { promptTokens: 1, completionTokens: 1 },
      }),
      embed: async (input) => ({
        embeddings: input.map(() => Float32Array.from([1])),
        usage: { promptTokens: input.length },
      }),
    };
  };
  const result: ModelLoaders = {
    chat: load,
    embeddings: load,
    transcription: () => Promise.reject(new Error('no speech here')),
    speech: () => Promise.reject(new Error('no speech here')),
  };
  return Object.assign(result, { loads });
}

const answer = async (engine: ReturnType<typeof createEngine>, id = 'chat') =>
  (await engine.chat(id, request)).choices[0]!.text;

describe('createEngine', () => {
  it('runs the first candidate the device can run', async () => {
    expect(await answer(createEngine({ profile, device: { webgpu: true, shaderF16: true }, loaders: loaders() }))).toBe(
      'web-llm:SmolLM2-360M-Instruct-q4f16_1-MLC',
    );
    expect(
      await answer(createEngine({ profile, device: { webgpu: true, shaderF16: false }, loaders: loaders() })),
    ).toBe('web-llm:SmolLM2-360M-Instruct-q4f32_1-MLC');
    expect(await answer(createEngine({ profile, loaders: loaders() }))).toBe('transformers:org/tiny@q4/cpu');
  });

  it("runs, in Node, a GGUF over WebAssembly's 4 GiB: node-llama-cpp holds its weights natively", async () => {
    const gguf: ModelCandidate = {
      engine: 'llama.cpp',
      model: '/models/big',
      file: 'big-f16.gguf',
      downloadBytes: 8.7e9,
    };
    const big: ModelProfile = { chat: { task: 'chat', created: 1, candidates: [gguf] } };
    expect(await answer(createEngine({ profile: big, loaders: loaders() }))).toBe('llama.cpp:/models/big/big-f16.gguf');
  });

  it('falls back along the chain in-process when a candidate fails to load, reporting each failure and the model ready', async () => {
    const fallback = loaders({
      'web-llm:SmolLM2-360M-Instruct-q4f16_1-MLC': webLLMError('ShaderF16SupportError'),
      'web-llm:SmolLM2-360M-Instruct-q4f32_1-MLC': webLLMError('WebGPUNotAvailableError'),
    });
    const progress: LoadProgress[] = [];
    const engine = createEngine({
      profile,
      device: { webgpu: true, shaderF16: true },
      loaders: fallback,
      onProgress: (p) => progress.push(p),
    });
    expect(await answer(engine)).toBe('transformers:org/tiny@q4/webgpu');
    expect(fallback.loads).toEqual([
      'web-llm:SmolLM2-360M-Instruct-q4f16_1-MLC',
      'web-llm:SmolLM2-360M-Instruct-q4f32_1-MLC',
      'transformers:org/tiny@q4/webgpu',
    ]);
    expect(progress.filter((p) => p.status === 'ready' || p.status === 'failed')).toEqual([
      {
        status: 'failed',
        model: 'chat',
        candidate: 'web-llm:SmolLM2-360M-Instruct-q4f16_1-MLC',
        reason: expect.any(String),
      },
      {
        status: 'failed',
        model: 'chat',
        candidate: 'web-llm:SmolLM2-360M-Instruct-q4f32_1-MLC',
        reason: expect.any(String),
      },
      { status: 'ready', model: 'chat', resolved: 'transformers:org/tiny@q4/webgpu' },
    ]);
    // Resolved once: later requests go straight to the loaded model.
    expect(await answer(engine)).toBe('transformers:org/tiny@q4/webgpu');
    expect(fallback.loads).toHaveLength(3);
  });

  it('names every candidate it tried when none loads, and tries again on the next request', async () => {
    const failing: Record<string, Error> = { 'transformers:org/tiny@q4/cpu': new Error('404 config.json') };
    const engine = createEngine({ profile, loaders: loaders(failing) });
    const error = await engine.chat('chat', request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EngineError);
    expect(error).toMatchObject({
      kind: 'load_failed',
      message: expect.stringMatching(/Tried transformers:org\/tiny@q4\/cpu: 404 config.json/),
    });
    delete failing['transformers:org/tiny@q4/cpu'];
    expect(await answer(engine)).toBe('transformers:org/tiny@q4/cpu');
  });

  it('says the storage is short when that is why nothing loaded', async () => {
    const short = new EngineError('insufficient_storage', 'Not enough storage to download org/tiny');
    const engine = createEngine({ profile, loaders: loaders({ 'transformers:org/tiny@q4/cpu': short }) });
    await expect(engine.chat('chat', request)).rejects.toMatchObject({ kind: 'insufficient_storage' });
  });

  it('lists only the models this device can serve, and refuses the others as not found', async () => {
    const cpuOnly = createEngine({ profile, loaders: loaders() });
    expect((await cpuOnly.models()).map((m) => m.id)).toEqual(['chat', 'vectors']);
    await expect(cpuOnly.chat('gpu-only', request)).rejects.toMatchObject({
      kind: 'model_not_found',
      message: expect.stringMatching(/cannot run on this device/),
    });
    const withGpu = createEngine({ profile, device: { webgpu: true, shaderF16: false }, loaders: loaders() });
    expect((await withGpu.models()).map((m) => [m.id, m.task, m.created])).toEqual([
      ['chat', 'chat', 1],
      ['gpu-only', 'chat', 2],
      ['vectors', 'embeddings', 3],
    ]);
    await expect(withGpu.embed('chat', { input: ['x'] })).rejects.toMatchObject({ kind: 'model_not_found' });
  });

  it('loads a model once however many IDs share it', async () => {
    const shared = loaders();
    const engine = createEngine({
      profile: {
        a: { task: 'chat', created: 0, candidates: [cpu] },
        b: { task: 'chat', created: 0, candidates: [cpu] },
      },
      loaders: shared,
    });
    await Promise.all([answer(engine, 'a'), answer(engine, 'b'), answer(engine, 'a')]);
    expect(shared.loads).toEqual(['transformers:org/tiny@q4/cpu']);
  });

  it('loads a model again once its runtime went away under a call (engine_lost), and the call is retried on it', async () => {
    const fine = loaders();
    let loads = 0;
    const once: ModelLoaders = {
      ...fine,
      // The first model's runtime is gone for good (wllama's worker failed): every call of it is engine_lost.
      chat: async (candidate, context) => {
        const model = await fine.chat(candidate, context);
        if (loads++ > 0) return model;
        return { generate: () => Promise.reject(new EngineError('engine_lost', "llama.cpp's worker failed")) };
      },
    };
    const engine = createEngine({ profile: { a: { task: 'chat', created: 0, candidates: [cpu] } }, loaders: once });
    expect(await answer(engine, 'a')).toBe('transformers:org/tiny@q4/cpu');
    expect(loads).toBe(2);
  });
});

describe('createEngine over a chain whose candidates fail to load', () => {
  const broken = new Error('protobuf parsing failed');
  const chain: ModelProfile = {
    chat: { task: 'chat', created: 1, candidates: [gpu, cpu] },
    vectors: { task: 'embeddings', created: 2, candidates: [gpu, cpu] },
    other: { task: 'chat', created: 3, candidates: [cpu] },
  };
  it('passes over a candidate whose download cannot fit or be made, and tries it again next time', async () => {
    const progress: LoadProgress[] = [];
    const shortfall = { needed: 4_000_000, free: 1_000_000, quota: 50_000_000 };
    const failing: Record<string, Error> = {
      [candidateKey(gpu)]: new EngineError('insufficient_storage', 'no room for org/tiny', { cause: shortfall }),
    };
    const tried = loaders(failing);
    const engine = createEngine({
      profile: chain,
      device: { webgpu: true, shaderF16: false },
      loaders: tried,
      onProgress: (p) => progress.push(p),
    });
    expect(await answer(engine)).toBe(candidateKey(cpu));
    expect(progress.filter((p) => p.status === 'skipped')).toEqual([
      { status: 'skipped', model: 'chat', candidate: candidateKey(gpu), reason: 'no room for org/tiny' },
    ]);
    expect(await answer(engine)).toBe(candidateKey(cpu));
    expect(tried.loads).toEqual([candidateKey(gpu), candidateKey(cpu), candidateKey(gpu)]);

    // Nothing fits: 503 insufficient_storage, saying what the smallest needs and what is free.
    const nothingFits = createEngine({
      profile: chain,
      device: { webgpu: true, shaderF16: false },
      loaders: loaders({
        [candidateKey(gpu)]: failing[candidateKey(gpu)]!,
        [candidateKey(cpu)]: new EngineError('insufficient_storage', 'no room', {
          cause: { needed: 2_000_000, free: 1_000_000, quota: 50_000_000 },
        }),
      }),
    });
    await expect(nothingFits.chat('chat', request)).rejects.toMatchObject({
      kind: 'insufficient_storage',
      message: expect.stringMatching(
        /^Model `chat` needs more storage than this site has: its smallest download needs about 2 MB, and 1 MB of the site's 50 MB quota is free/,
      ),
    });

    // A download that failed (offline) is passed over the same way, and answered 503 download_failed when all were.
    const offline = createEngine({
      profile: chain,
      device: { webgpu: true, shaderF16: false },
      loaders: loaders({
        [candidateKey(gpu)]: new EngineError('download_failed', 'offline'),
        [candidateKey(cpu)]: new EngineError('download_failed', 'offline'),
      }),
    });
    await expect(offline.chat('chat', request)).rejects.toMatchObject({ kind: 'download_failed' });
  });

  it("answers the last candidate's failure with every candidate's reason", async () => {
    const engine = createEngine({
      profile: chain,
      loaders: loaders({ [candidateKey(gpu)]: broken, [candidateKey(cpu)]: new Error('404 config.json') }),
      device: { webgpu: true, shaderF16: false },
    });
    const error = await engine.chat('chat', request).catch((e: unknown) => e);
    expect(error).toMatchObject({
      kind: 'load_failed',
      message:
        'Model `chat` could not be loaded on this device. Tried transformers:org/tiny@q4/webgpu: protobuf parsing ' +
        'failed; transformers:org/tiny@q4/cpu: 404 config.json',
    });
  });
});
