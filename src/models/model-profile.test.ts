import { describe, expect, it } from 'vitest';
import {
  bundledProfile,
  candidateChain,
  candidateKey,
  CPU_ONLY,
  modelChain,
  needsShaderF16,
  NODE_CPU,
  OPENAI_ALIASES,
  PUBLIC_MODELS,
  resolveModelName,
  usableCandidates,
  validateProfile,
  WEB_LLM_LIMITS,
  type AdapterLimits,
  type DeviceCapabilities,
  type LocalCandidate,
  type ModelEntry,
} from './model-profile.ts';
import { DEFAULT_PROFILE } from './model-registry.ts';

const devices: Record<string, DeviceCapabilities> = {
  'no WebGPU (wasm)': CPU_ONLY,
  'Node (native CPU)': NODE_CPU,
  'WebGPU without shader-f16 (SwiftShader)': { webgpu: true, shaderF16: false },
  'WebGPU with shader-f16': { webgpu: true, shaderF16: true },
};

const chain = (id: string, device: DeviceCapabilities) =>
  usableCandidates(DEFAULT_PROFILE[id]!, device).map(candidateKey);

describe('llama.cpp in the default registry', () => {
  it('serves each chat ID from Qwen3 GGUF after the CPU candidate', () => {
    expect(chain('amber-phoenix-4', CPU_ONLY)).toEqual([
      'transformers:onnx-community/Qwen3-1.7B-ONNX@q4/cpu',
      'llama.cpp:Qwen/Qwen3-1.7B-GGUF/Qwen3-1.7B-Q8_0.gguf',
    ]);
  });
});

describe('the default registry', () => {
  it('maps every public ID, chat and embeddings alike', () => {
    expect(Object.keys(DEFAULT_PROFILE)).toEqual(Object.keys(PUBLIC_MODELS));
    for (const [id, task] of Object.entries(PUBLIC_MODELS)) expect(DEFAULT_PROFILE[id]!.task).toBe(task);
  });

  it.each(Object.entries(devices))('answers every ID on %s', (_name, device) => {
    for (const id of Object.keys(PUBLIC_MODELS)) expect(chain(id, device).length).toBeGreaterThan(0);
  });

  it('chooses web-llm in half precision where shader-f16 exists, then falls back in order', () => {
    expect(chain('crimson-falcon-4', devices['WebGPU with shader-f16']!)).toEqual([
      'web-llm:Qwen3-0.6B-q4f16_1-MLC',
      'web-llm:Qwen3-0.6B-q4f32_1-MLC',
      'transformers:onnx-community/Qwen3-0.6B-ONNX@q4f16/webgpu',
      'transformers:onnx-community/Qwen3-0.6B-ONNX@q4/webgpu',
      'transformers:onnx-community/Qwen3-0.6B-ONNX@q4/cpu',
      'llama.cpp:Qwen/Qwen3-0.6B-GGUF/Qwen3-0.6B-Q8_0.gguf',
      // For requests with images (and the last fallback of text).
      'transformers:onnx-community/FastVLM-0.5B-ONNX@q4f16/webgpu',
      'transformers:onnx-community/FastVLM-0.5B-ONNX@q8/cpu',
    ]);
  });

  it('runs Qwen3-4B for the reasoning model on the GPU, and Qwen3-1.7B on the CPU', () => {
    expect(chain('amber-phoenix-4', devices['WebGPU with shader-f16']!)).toEqual([
      'web-llm:Qwen3-4B-q4f16_1-MLC',
      'web-llm:Qwen3-4B-q4f32_1-MLC',
      'transformers:onnx-community/Qwen3-4B-ONNX@q4f16/webgpu',
      'transformers:onnx-community/Qwen3-4B-ONNX@q4/webgpu',
      'transformers:onnx-community/Qwen3-1.7B-ONNX@q4/cpu',
      'llama.cpp:Qwen/Qwen3-1.7B-GGUF/Qwen3-1.7B-Q8_0.gguf',
    ]);
  });

  it('skips everything half-precision on an adapter without shader-f16', () => {
    for (const id of ['crimson-falcon-4', 'indigo-owl-4', 'amber-phoenix-4']) {
      const keys = chain(id, devices['WebGPU without shader-f16 (SwiftShader)']!);
      expect(keys[0]).toMatch(/^web-llm:.*-q4f32_1-MLC$/);
      expect(keys.some((k) => /f16/.test(k))).toBe(false);
      expect(keys.filter((k) => !k.includes('FastVLM')).at(-1)).toMatch(/^llama\.cpp:Qwen\/.*-Q8_0\.gguf$/);
    }
  });

  it('runs only transformers.js and llama.cpp on the CPU without WebGPU', () => {
    for (const id of Object.keys(PUBLIC_MODELS)) {
      for (const key of chain(id, CPU_ONLY)) expect(key).toMatch(/^transformers:.*\/cpu$|^llama\.cpp:/);
    }
  });

  it('orders three chat models by size', () => {
    const size = (id: string) => (DEFAULT_PROFILE[id]!.candidates[0] as LocalCandidate).downloadBytes!;
    expect(size('crimson-falcon-4')).toBeLessThan(size('indigo-owl-4'));
    expect(size('indigo-owl-4')).toBeLessThan(size('amber-phoenix-4'));
  });
});

describe('needsShaderF16', () => {
  it('reads half precision from web-llm model IDs and transformers.js dtypes on WebGPU', () => {
    expect(needsShaderF16({ engine: 'web-llm', model: 'SmolLM2-135M-Instruct-q0f16-MLC' })).toBe(true);
    expect(needsShaderF16({ engine: 'web-llm', model: 'Qwen2.5-0.5B-Instruct-q4f16_1-MLC' })).toBe(true);
    expect(needsShaderF16({ engine: 'web-llm', model: 'Qwen2.5-0.5B-Instruct-q4f32_1-MLC' })).toBe(false);
    expect(needsShaderF16({ engine: 'transformers', model: 'm', dtype: 'fp16', device: 'webgpu' })).toBe(true);
    expect(needsShaderF16({ engine: 'transformers', model: 'm', dtype: 'fp16', device: 'cpu' })).toBe(false);
    expect(needsShaderF16({ engine: 'transformers', model: 'm', dtype: 'q4', device: 'webgpu' })).toBe(false);
  });
});

describe('the bundled profile', () => {
  it.each(Object.entries(devices))('answers every ID offline on %s, on WebGPU when there is one', (_name, device) => {
    const profile = bundledProfile('/models');
    for (const id of Object.keys(PUBLIC_MODELS)) {
      const keys = usableCandidates(profile[id]!, device).map(candidateKey);
      // The chat model first; tiny-vision after it for a request with images; the GGUF copy on llama.cpp last.
      const own = keys.filter((key) => !key.includes('tiny-vision') && !key.startsWith('llama.cpp:'));
      expect(own.at(-1)).toMatch(/^transformers:\/models\/tiny-(chat|think|embed|whisper|speech)@fp32\/cpu$/);
      const gguf = keys.filter((key) => key.startsWith('llama.cpp:'));
      expect(gguf).toEqual(
        /whisper|speech/.test(own[0]!)
          ? []
          : [own[0]!.replace(/^transformers:\/models\/([\w-]+)@.*$/, 'llama.cpp:/models/$1/gguf/$1-f32.gguf')],
      );
      expect(keys[0]!.endsWith('/webgpu')).toBe(device.webgpu);
    }
  });
});

describe('candidateChain', () => {
  const server = { engine: 'remote', baseURL: 'https://user:pw@llm.example/v1/?key=k', model: 'big' } as const;
  const entry = {
    task: 'chat' as const,
    created: 0,
    candidates: [server, ...DEFAULT_PROFILE['crimson-falcon-4']!.candidates],
  };
  const keys = (policy?: 'local-first' | 'remote-first' | 'local-only', device = CPU_ONLY) =>
    candidateChain(entry, device, policy).map(candidateKey);

  it('puts the servers after the local candidates this device can run, or first, or nowhere, as the policy says', () => {
    // Qwen3's GGUF on llama.cpp after the CPU candidate.
    const local = [
      'transformers:onnx-community/Qwen3-0.6B-ONNX@q4/cpu',
      'llama.cpp:Qwen/Qwen3-0.6B-GGUF/Qwen3-0.6B-Q8_0.gguf',
      'transformers:onnx-community/FastVLM-0.5B-ONNX@q8/cpu',
    ];
    const remote = 'remote:big@https://llm.example/v1'; // no user, password or query: they can hold secrets
    expect(keys()).toEqual([...local, remote]);
    expect(keys('remote-first')).toEqual([remote, ...local]);
    expect(keys('local-only')).toEqual(local);
    expect(usableCandidates(entry, CPU_ONLY).map(candidateKey)).toEqual(local);
  });
});

/** What headless Chromium 156 reports for SwiftShader (read in the webgpu e2e project). */
const SWIFTSHADER_LIMITS: AdapterLimits = {
  maxBufferSize: 2 ** 30,
  maxStorageBufferBindingSize: 2 ** 30,
  maxStorageBuffersPerShaderStage: 10,
  maxComputeWorkgroupStorageSize: 32 * 2 ** 10,
};
/** The limits WebGPU guarantees on every adapter: what a phone or an old integrated GPU may offer. */
const SPEC_DEFAULT_LIMITS: AdapterLimits = {
  maxBufferSize: 256 * 2 ** 20,
  maxStorageBufferBindingSize: 128 * 2 ** 20,
  maxStorageBuffersPerShaderStage: 8,
  maxComputeWorkgroupStorageSize: 16 * 2 ** 10,
};
const swiftShader: DeviceCapabilities = {
  webgpu: true,
  shaderF16: false,
  fallbackAdapter: true,
  limits: SWIFTSHADER_LIMITS,
};

describe('a fallback (software) adapter', () => {
  it('puts the CPU first in the real registry, the GPU candidates after it', () => {
    expect(chain('crimson-falcon-4', swiftShader)).toEqual([
      'transformers:onnx-community/Qwen3-0.6B-ONNX@q4/cpu',
      'llama.cpp:Qwen/Qwen3-0.6B-GGUF/Qwen3-0.6B-Q8_0.gguf',
      'web-llm:Qwen3-0.6B-q4f32_1-MLC',
      'transformers:onnx-community/Qwen3-0.6B-ONNX@q4/webgpu',
      // The vision candidates stay after the text ones, reordered among themselves.
      'transformers:onnx-community/FastVLM-0.5B-ONNX@q8/cpu',
    ]);
    expect(chain('jade-mole-4', swiftShader)).toEqual([
      'transformers:Xenova/all-MiniLM-L6-v2@q8/cpu',
      'llama.cpp:second-state/All-MiniLM-L6-v2-Embedding-GGUF/all-MiniLM-L6-v2-Q8_0.gguf',
      'transformers:Xenova/all-MiniLM-L6-v2@fp32/webgpu',
    ]);
  });

  it('keeps a candidate marked evenOnFallbackAdapter in its place: the bundled profile stays on WebGPU', () => {
    const profile = bundledProfile('/models');
    expect(usableCandidates(profile['crimson-falcon-4']!, swiftShader).map(candidateKey)).toEqual([
      'transformers:/models/tiny-chat@fp32/webgpu',
      'transformers:/models/tiny-chat@fp32/cpu',
      'llama.cpp:/models/tiny-chat/gguf/tiny-chat-f32.gguf',
      'transformers:/models/tiny-vision@fp32/webgpu',
      'transformers:/models/tiny-vision@fp32/cpu',
    ]);
  });

  it('changes nothing on a hardware adapter', () => {
    const hardware = { ...swiftShader, fallbackAdapter: false };
    expect(chain('crimson-falcon-4', hardware)[0]).toBe('web-llm:Qwen3-0.6B-q4f32_1-MLC');
  });
});

describe("the adapter's limits", () => {
  const small: DeviceCapabilities = { webgpu: true, shaderF16: true, limits: SPEC_DEFAULT_LIMITS };

  it("skips web-llm where the adapter has less than web-llm's own minimums, saying why", () => {
    const entry = DEFAULT_PROFILE['crimson-falcon-4']!;
    const { candidates, skipped } = modelChain(entry, small);
    expect(candidates.some((c) => c.engine === 'web-llm')).toBe(false);
    expect(skipped).toContainEqual({
      candidate: 'web-llm:Qwen3-0.6B-q4f16_1-MLC',
      reason: 'needs maxStorageBuffersPerShaderStage of at least 10; the adapter has 8',
    });
    const enough = modelChain(entry, { ...small, limits: { ...SPEC_DEFAULT_LIMITS, ...WEB_LLM_LIMITS } });
    expect(enough.candidates.filter((c) => c.engine === 'web-llm')).toHaveLength(2);
  });

  it('skips a transformers.js WebGPU build whose largest weight does not fit one buffer', () => {
    // Qwen3-0.6B's embedding table: 151,936 × 1,024 × 2 bytes = 311 MB in q4f16, over the 256 MiB every adapter has.
    expect(chain('crimson-falcon-4', small)).toEqual([
      'transformers:onnx-community/Qwen3-0.6B-ONNX@q4/cpu',
      'llama.cpp:Qwen/Qwen3-0.6B-GGUF/Qwen3-0.6B-Q8_0.gguf',
      'transformers:onnx-community/FastVLM-0.5B-ONNX@q8/cpu',
    ]);
    const skipped = modelChain(DEFAULT_PROFILE['crimson-falcon-4']!, small).skipped;
    expect(skipped).toContainEqual({
      candidate: 'transformers:onnx-community/Qwen3-0.6B-ONNX@q4f16/webgpu',
      reason: `needs maxBufferSize of at least ${151_936 * 1024 * 2}; the adapter has ${256 * 2 ** 20}`,
    });
    // Every ID still answers: the CPU candidate needs no adapter.
    for (const id of Object.keys(PUBLIC_MODELS)) expect(chain(id, small).at(-1)).toMatch(/\/cpu$|^llama\.cpp:/);
  });

  it("fits every GPU candidate of the registry in SwiftShader's 1 GiB buffers but two single-precision tables", () => {
    // The fp32 embedding tables of Qwen3-1.7B (151,936 × 2,048 × 4 bytes) and Qwen3-4B (× 2,560) are over 1 GiB: those
    // builds move aside for the next candidate there.
    const skipped = Object.values(DEFAULT_PROFILE).flatMap(
      (entry) => modelChain(entry, { ...swiftShader, shaderF16: true }).skipped,
    );
    expect(skipped).toEqual([
      {
        candidate: 'transformers:onnx-community/Qwen3-1.7B-ONNX@q4/webgpu',
        reason: `needs maxBufferSize of at least ${151_936 * 2048 * 4}; the adapter has ${2 ** 30}`,
      },
      {
        candidate: 'transformers:onnx-community/Qwen3-4B-ONNX@q4/webgpu',
        reason: `needs maxBufferSize of at least ${151_936 * 2560 * 4}; the adapter has ${2 ** 30}`,
      },
    ]);
  });

  it('skips nothing for its size where the limits are unknown', () => {
    expect(chain('amber-phoenix-4', { webgpu: true, shaderF16: false })).toHaveLength(4);
  });
});

describe('modelChain', () => {
  const a = { engine: 'transformers', model: 'a', device: 'cpu' } as const;
  const b = { engine: 'transformers', model: 'b', device: 'cpu' } as const;
  const gpu = { engine: 'transformers', model: 'g', device: 'webgpu' } as const;
  const entry: ModelEntry = { task: 'chat', created: 0, candidates: [gpu, a, b] };

  it('leaves out the candidates that failed to load here, and says why', () => {
    const failure = { candidate: candidateKey(a), reason: 'protobuf parsing failed' };
    expect(modelChain(entry, CPU_ONLY, [failure])).toEqual({
      candidates: [b],
      failed: [failure],
      skipped: [{ candidate: candidateKey(gpu), reason: 'needs WebGPU' }],
    });
  });

  it('never leaves out the last one: it is tried again on every request', () => {
    const failures = [a, b].map((c) => ({ candidate: candidateKey(c), reason: 'missing' }));
    expect(modelChain(entry, CPU_ONLY, failures)).toMatchObject({ candidates: [b], failed: [failures[0]] });
  });

  it('names each failure once, though two candidates share its key', () => {
    const seeing = { ...a, images: true } as const;
    const failure = { candidate: candidateKey(a), reason: 'protobuf parsing failed' };
    const both: ModelEntry = { task: 'chat', created: 0, candidates: [a, b, seeing] };
    expect(modelChain(both, CPU_ONLY, [failure])).toMatchObject({ candidates: [b], failed: [failure] });
  });
});

describe('the memory a CPU model needs', () => {
  const cpu = (gigabytes: number, device: 'cpu' | 'webgpu' = 'cpu'): LocalCandidate => ({
    engine: 'transformers',
    model: 'org/model',
    dtype: 'q4',
    device,
    downloadBytes: gigabytes * 2 ** 30,
  });
  const entry = (...candidates: LocalCandidate[]): ModelEntry => ({ task: 'chat', created: 0, candidates });

  it("skips, before downloading, a model over WebAssembly's 4 GiB, whatever the device reports", () => {
    const { candidates, skipped } = modelChain(entry(cpu(4.5), cpu(1)), CPU_ONLY);
    expect(candidates).toEqual([cpu(1)]);
    expect(skipped).toEqual([
      {
        candidate: 'transformers:org/model@q4/cpu',
        reason: "its weights (4.5 GiB) do not fit WebAssembly's 4 GiB of memory",
      },
    ]);
  });

  it("applies WebAssembly's 4 GiB only where WebAssembly holds the weights: not to Node's native engines", () => {
    // An 8.7 GB GGUF (Qwen3-4B in f16), as node-llama-cpp runs it in Node and wllama could not in a browser.
    const gguf: LocalCandidate = {
      engine: 'llama.cpp',
      model: 'Qwen/Qwen3-4B-GGUF',
      file: 'Qwen3-4B-f16.gguf',
      downloadBytes: 8.7e9,
    };
    expect(modelChain(entry(gguf), NODE_CPU)).toMatchObject({ candidates: [gguf], skipped: [] });
    expect(modelChain(entry(gguf), CPU_ONLY)).toMatchObject({
      candidates: [],
      skipped: [
        {
          candidate: 'llama.cpp:Qwen/Qwen3-4B-GGUF/Qwen3-4B-f16.gguf',
          reason: "its weights (8.1 GiB) do not fit WebAssembly's 4 GiB of memory",
        },
      ],
    });
    // onnxruntime-node, likewise.
    expect(modelChain(entry(cpu(4.5)), NODE_CPU).candidates).toEqual([cpu(4.5)]);
  });

  it('skips one over half the memory the browser reports (navigator.deviceMemory), and none where it reports none', () => {
    const phone: DeviceCapabilities = { ...CPU_ONLY, memoryBytes: 4 * 2 ** 30 };
    expect(modelChain(entry(cpu(2.5)), phone).skipped).toEqual([
      {
        candidate: 'transformers:org/model@q4/cpu',
        reason: 'its weights (2.5 GiB) need more memory than this device reports (4.0 GiB)',
      },
    ]);
    expect(modelChain(entry(cpu(1.5)), phone).candidates).toHaveLength(1);
    // Safari and Firefox report no memory: only WebAssembly's limit applies.
    expect(modelChain(entry(cpu(2.5)), CPU_ONLY).candidates).toHaveLength(1);
  });

  it('leaves GPU models to the adapter limits: the reported memory is not the GPU memory', () => {
    const gpu = cpu(6, 'webgpu');
    const desktop: DeviceCapabilities = { webgpu: true, shaderF16: true, memoryBytes: 8 * 2 ** 30 };
    expect(modelChain(entry(gpu), desktop).candidates).toEqual([gpu]);
  });

  it('fits every CPU candidate of the registry in a device that reports 8 GiB', () => {
    for (const model of Object.values(DEFAULT_PROFILE)) {
      const reported = { ...CPU_ONLY, memoryBytes: 8 * 2 ** 30 };
      expect(modelChain(model, reported).skipped).toEqual(modelChain(model, CPU_ONLY).skipped);
    }
  });
});

describe('aliases', () => {
  const chat = (...aliases: string[]): ModelEntry => ({ task: 'chat', created: 0, candidates: [], aliases });

  it('gives the default and bundled profiles the OpenAI names, each to one ID', () => {
    for (const profile of [DEFAULT_PROFILE, bundledProfile('/models')]) {
      expect(() => validateProfile(profile)).not.toThrow();
      for (const [id, names] of Object.entries(OPENAI_ALIASES)) {
        expect(profile[id]!.aliases).toEqual(names);
        for (const name of names) expect(resolveModelName(profile, name)).toBe(id);
      }
      expect(resolveModelName(profile, 'jade-mole-4')).toBe('jade-mole-4');
      expect(resolveModelName(profile, 'gpt-4o-2024-08-06')).toBeUndefined();
      expect(resolveModelName(profile, 'toString')).toBeUndefined();
    }
  });

  it('puts the reasoning names on the model that thinks by default, and only that one', () => {
    for (const profile of [DEFAULT_PROFILE, bundledProfile('/models')]) {
      expect(profile['amber-phoenix-4']!.defaultReasoningEffort).toBe('medium');
      for (const id of ['crimson-falcon-4', 'indigo-owl-4', 'jade-mole-4'])
        expect(profile[id]!.defaultReasoningEffort).toBeUndefined();
    }
    expect(OPENAI_ALIASES['amber-phoenix-4']).toEqual(expect.arrayContaining(['o4-mini', 'o3-mini', 'o1', 'gpt-5']));
  });

  it('refuses an alias that is also an ID', () => {
    expect(() => validateProfile({ a: chat('b'), b: chat() })).toThrow(
      new TypeError('`b` cannot be an alias of `a`: it is a model ID of the profile.'),
    );
    expect(() => validateProfile({ a: chat('a') })).toThrow(TypeError);
  });

  it('refuses an alias of two entries, and takes one listed twice by the same entry', () => {
    expect(() => validateProfile({ a: chat('gpt-4o'), b: chat('gpt-4o') })).toThrow(
      new TypeError('`gpt-4o` is an alias of both `a` and `b`: an alias names one model.'),
    );
    expect(() => validateProfile({ a: chat('gpt-4o', 'gpt-4o') })).not.toThrow();
  });

  it('refuses an alias that is no name', () => {
    expect(() => validateProfile({ a: chat('') })).toThrow(/aliases of `a` must be names/);
    expect(() => validateProfile({ a: chat(7 as unknown as string) })).toThrow(/one is 7/);
  });
});
