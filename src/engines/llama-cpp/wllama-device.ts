/*
 * Which llama.cpp build a browser runs, and on what. wllama 3 is built for 64-bit WebAssembly memory (memory64) and
 * JSPI (WebAssembly.Suspending: its WebGPU calls and its reads of the GGUF's blobs suspend the module); a browser
 * without either would need its compat build (`@wllama/wllama-compat`, not installed), so it runs wllama 2.3.7 on the
 * CPU. llama.cpp's WebGPU backend asks its device for `shader-f16`: an adapter without it (SwiftShader's, Chromium's
 * software WebGPU) leaves every layer on the CPU, silently, so it is checked here first.
 */

/** Where llama.cpp runs in this browser: wllama 3 on WebGPU, or wllama 2 on the CPU. */
export interface LlamaDevice {
  runtime: 'wllama3' | 'wllama2';
  device: 'webgpu' | 'wasm';
  /** Why not WebGPU, in words for the loaded-model report; absent on WebGPU. */
  reason?: string;
}

/** What a browser offers llama.cpp, as {@link llamaDeviceOf} weighs it. */
export interface BrowserFeatures {
  jspi: boolean;
  memory64: boolean;
  /** The WebGPU adapter's features, or undefined where there is no adapter. */
  adapterFeatures: ReadonlySet<string> | undefined;
}

/**
 * wllama 3 on WebGPU where llama.cpp's WebGPU backend would run; wllama 2 on the CPU everywhere else. wllama 3 offers
 * no logits, so a plan it cannot run whole (wllama3Gap) has no other path on it; on the CPU wllama 2 runs every plan
 * through the generation core, at about wllama 3's speed (docs/models.md), so wllama 3 is worth it on WebGPU alone.
 */
export function llamaDeviceOf(features: BrowserFeatures): LlamaDevice {
  const cpu = (reason: string): LlamaDevice => ({ runtime: 'wllama2', device: 'wasm', reason });
  if (!features.jspi || !features.memory64) {
    const lacks = [!features.jspi && 'JSPI', !features.memory64 && '64-bit WebAssembly memory'].filter(Boolean);
    return cpu(`this browser lacks ${lacks.join(' and ')}, which wllama 3 needs`);
  }
  if (!features.adapterFeatures) return cpu('no WebGPU adapter');
  if (!features.adapterFeatures.has('shader-f16'))
    return cpu("the WebGPU adapter lacks shader-f16, which llama.cpp's WebGPU backend needs");
  return { runtime: 'wllama3', device: 'webgpu' };
}

/** This browser's features (in a page or a worker). */
export async function browserFeatures(): Promise<BrowserFeatures> {
  const gpu = (navigator as { gpu?: { requestAdapter(): Promise<{ features: ReadonlySet<string> } | null> } }).gpu;
  const adapter = await gpu?.requestAdapter().catch(() => null);
  return {
    jspi: 'Suspending' in WebAssembly,
    memory64: hasMemory64(),
    adapterFeatures: adapter ? new Set(adapter.features) : undefined,
  };
}

function hasMemory64(): boolean {
  try {
    new WebAssembly.Memory({ address: 'i64', initial: 1n } as unknown as WebAssembly.MemoryDescriptor);
    return true;
  } catch {
    return false;
  }
}

/** The device as `lantern.models()` and the loaded-model report name it. */
export const llamaDeviceLabel = (device: LlamaDevice) =>
  `llama.cpp (${device.device === 'webgpu' ? 'WebGPU' : 'wasm'})`;
