import { describe, expect, it } from 'vitest';
import { bundledProfile, createEngine, type LoadProgress, type RunsOn } from '../src/index.ts';
import { defaultCpuThreads } from '../src/engines/cpu-threads.ts';
import { nodeRunsOn } from '../src/engines/llama-cpp/node-llama-runtime.ts';
import type { LlamaCppCandidate } from '../src/engines/llama-cpp/llama-cpp-engine.ts';
import { chatRequest } from './support/chat-request.ts';
import { BUNDLED_MODELS } from './support/lantern.ts';

/**
 * What a loaded model says of where it runs, in Node: the `ready` progress event and `/v1/models`' card (`runsOn`, by
 * the candidates' public names), as each engine's runtime found it. This machine has no GPU: node-llama-cpp finds no
 * backend and runs on the CPU. (web-llm: test/web-llm.test.ts; browsers: test/e2e/llama-cpp.spec.ts.)
 */
async function loadedOn(engines: ('llama.cpp' | 'transformers')[], id: string, run: (engine: Engine) => Promise<void>) {
  const ready: LoadProgress[] = [];
  const engine = createEngine({
    profile: bundledProfile(BUNDLED_MODELS, { engines }),
    onProgress: (progress) => void (progress.status === 'ready' && ready.push(progress)),
  });
  const before = (await engine.models()).find((card) => card.id === id)!;
  await run(engine);
  const after = (await engine.models()).find((card) => card.id === id)!;
  return { before, after, ready };
}
type Engine = ReturnType<typeof createEngine>;

const hello = chatRequest({ maxTokens: 2 });
const cpu: RunsOn = { device: 'cpu', threads: defaultCpuThreads() };

describe('where a loaded model runs, in Node', () => {
  it('llama.cpp: the CPU, as node-llama-cpp found no GPU backend here, for chat and embeddings', async () => {
    const chat = await loadedOn(['llama.cpp'], 'crimson-falcon-4', (engine) =>
      engine.chat('crimson-falcon-4', hello).then(() => {}),
    );
    expect(chat.before.runsOn).toBeUndefined(); // nothing loaded yet
    expect(chat.after.runsOn).toEqual({ [chat.after.servedBy!]: cpu });
    expect(chat.after.servedBy).toMatch(/^llama\.cpp:/);
    expect(chat.ready).toMatchObject([{ model: 'crimson-falcon-4', runsOn: cpu }]);

    const embed = await loadedOn(['llama.cpp'], 'jade-mole-4', (engine) =>
      engine.embed('jade-mole-4', { input: ['Hello'] }).then(() => {}),
    );
    expect(embed.after.runsOn).toEqual({ [embed.after.servedBy!]: cpu });
  });

  it('llama.cpp: the GPU backend node-llama-cpp found, where it offloaded layers to it; the CPU where it kept none', () => {
    const candidate: LlamaCppCandidate = { engine: 'llama.cpp', model: '/m', file: 'm.gguf', threads: 3 };
    expect(nodeRunsOn({ gpu: 'cuda' }, { gpuLayers: 29 }, candidate)).toEqual({ device: 'cuda' });
    expect(nodeRunsOn({ gpu: 'metal' }, { gpuLayers: 1 }, candidate)).toEqual({ device: 'metal' });
    expect(nodeRunsOn({ gpu: 'vulkan' }, { gpuLayers: 0 }, candidate)).toEqual({ device: 'cpu', threads: 3 });
    expect(nodeRunsOn({ gpu: false }, { gpuLayers: 0 }, candidate)).toEqual({ device: 'cpu', threads: 3 });
  });

  it('transformers.js: the CPU (onnxruntime-node), with its session threads', async () => {
    const chat = await loadedOn(['transformers'], 'crimson-falcon-4', (engine) =>
      engine.chat('crimson-falcon-4', hello).then(() => {}),
    );
    expect(chat.after.servedBy).toMatch(/^transformers:/);
    expect(chat.after.runsOn).toEqual({ [chat.after.servedBy!]: cpu });
    expect(chat.ready).toMatchObject([{ model: 'crimson-falcon-4', runsOn: cpu }]);
  });
});
