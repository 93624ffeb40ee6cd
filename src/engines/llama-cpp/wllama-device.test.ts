import { describe, expect, it } from 'vitest';
import { llamaDeviceLabel, llamaDeviceOf } from './wllama-device.ts';

const gpu = (...features: string[]) => new Set(features);

describe('where llama.cpp runs in a browser', () => {
  it('runs wllama 3 on WebGPU where the adapter has shader-f16', () => {
    const device = llamaDeviceOf({ jspi: true, memory64: true, adapterFeatures: gpu('shader-f16', 'subgroups') });
    expect(device).toEqual({ runtime: 'wllama3', device: 'webgpu' });
    expect(llamaDeviceLabel(device)).toBe('llama.cpp (WebGPU)');
  });

  it("keeps wllama 2 on the CPU under an adapter without shader-f16 (SwiftShader's), where llama.cpp's WebGPU backend would not run", () => {
    const device = llamaDeviceOf({ jspi: true, memory64: true, adapterFeatures: gpu('subgroups', 'timestamp-query') });
    expect(device).toMatchObject({ runtime: 'wllama2', device: 'wasm', reason: expect.stringMatching(/shader-f16/) });
    expect(llamaDeviceLabel(device)).toBe('llama.cpp (wasm)');
  });

  it('keeps wllama 2 where there is no adapter, or wllama 3 would not load (no JSPI: Firefox ESR; no memory64: WebKit)', () => {
    expect(llamaDeviceOf({ jspi: true, memory64: true, adapterFeatures: undefined })).toMatchObject({
      runtime: 'wllama2',
      reason: 'no WebGPU adapter',
    });
    expect(llamaDeviceOf({ jspi: false, memory64: true, adapterFeatures: gpu('shader-f16') })).toMatchObject({
      runtime: 'wllama2',
      reason: expect.stringMatching(/lacks JSPI,/),
    });
    expect(llamaDeviceOf({ jspi: false, memory64: false, adapterFeatures: undefined })).toMatchObject({
      runtime: 'wllama2',
      reason: expect.stringMatching(/JSPI and 64-bit WebAssembly memory/),
    });
  });
});
