import type { AdapterLimits, DeviceCapabilities } from '../models/model-profile.ts';
import type { DeviceInfo, DevicePreference } from './protocol.ts';

/**
 * Picks where models run: WebGPU when an adapter exists (unless wasm is asked for), otherwise WebAssembly, which
 * every browser has. Asking for WebGPU where there is none falls back to wasm rather than failing: every model ID
 * must answer on any browser.
 *
 * The adapter is asked for as the engines ask for theirs (onnxruntime-web, as transformers.js sets it up, and web-llm
 * both request `powerPreference: 'high-performance'`): on a machine with two GPUs, a default request can describe the
 * other one, whose features (`shader-f16`) and limits are not those of the GPU the models will run on.
 */
export async function detectDevice(preference: DevicePreference): Promise<DeviceInfo> {
  const gpu = (navigator as Navigator & { gpu?: GPU }).gpu;
  const adapter = gpu ? await gpu.requestAdapter({ powerPreference: 'high-performance' }).catch(() => null) : null;
  return {
    device: adapter && preference !== 'wasm' ? 'webgpu' : 'wasm',
    adapter: adapter
      ? {
          vendor: adapter.info.vendor,
          architecture: adapter.info.architecture,
          description: adapter.info.description,
          // GPUAdapterInfo.isFallbackAdapter since Chromium 136; GPUAdapter.isFallbackAdapter before it.
          isFallbackAdapter:
            adapter.info.isFallbackAdapter ?? (adapter as { isFallbackAdapter?: boolean }).isFallbackAdapter ?? false,
          limits: adapterLimits(adapter.limits),
        }
      : null,
    shaderF16: adapter?.features.has('shader-f16') ?? false,
    memoryBytes: reportedMemory(),
  };
}

/** `navigator.deviceMemory` (GiB, rounded down) in bytes, where the browser reports it (Chromium, in workers too). */
function reportedMemory(): number | null {
  const gib = (navigator as Navigator & { deviceMemory?: number }).deviceMemory;
  return typeof gib === 'number' && gib > 0 ? gib * 2 ** 30 : null;
}

function adapterLimits(limits: GPUSupportedLimits): AdapterLimits {
  return {
    maxBufferSize: limits.maxBufferSize,
    maxStorageBufferBindingSize: limits.maxStorageBufferBindingSize,
    maxStorageBuffersPerShaderStage: limits.maxStorageBuffersPerShaderStage,
    maxComputeWorkgroupStorageSize: limits.maxComputeWorkgroupStorageSize,
  };
}

/** What the device offers for choosing models, as the engines' fallback chains read it. */
export function deviceCapabilities(info: DeviceInfo): DeviceCapabilities {
  const memory = info.memoryBytes ? { memoryBytes: info.memoryBytes } : {};
  if (info.device !== 'webgpu' || !info.adapter) return { webgpu: false, shaderF16: false, ...memory };
  return {
    webgpu: true,
    shaderF16: info.shaderF16,
    fallbackAdapter: info.adapter.isFallbackAdapter,
    limits: info.adapter.limits,
    ...memory,
  };
}
