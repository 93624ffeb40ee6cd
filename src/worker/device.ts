import type { DeviceInfo, DevicePreference } from './protocol.ts';

/**
 * Picks where models run: WebGPU when an adapter exists (unless wasm is asked for), otherwise WebAssembly, which
 * every browser has. Asking for WebGPU where there is none falls back to wasm rather than failing: every model ID
 * must answer on any browser.
 */
export async function detectDevice(preference: DevicePreference): Promise<DeviceInfo> {
  const gpu = (navigator as Navigator & { gpu?: GPU }).gpu;
  const adapter = gpu ? await gpu.requestAdapter().catch(() => null) : null;
  return {
    device: adapter && preference !== 'wasm' ? 'webgpu' : 'wasm',
    adapter: adapter
      ? {
          vendor: adapter.info.vendor,
          architecture: adapter.info.architecture,
          description: adapter.info.description,
        }
      : null,
    shaderF16: adapter?.features.has('shader-f16') ?? false,
  };
}
