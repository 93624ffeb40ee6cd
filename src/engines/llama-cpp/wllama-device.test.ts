import { describe, expect, it } from 'vitest';
import { llamaDeviceLabel, llamaDeviceOf, offloadWatch } from './wllama-device.ts';

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

describe('offloadWatch', () => {
  it("reads llama.cpp's count of the layers it offloaded from its load log, and nothing else", () => {
    const watch = offloadWatch();
    watch.logger.log('llama_model_load: loading model tensors, this can take a while...');
    expect(watch.layers).toBe(0);
    watch.logger.log('load_tensors: offloaded 3/3 layers to GPU');
    expect(watch.layers).toBe(3);
    watch.logger.debug('load_tensors: offloaded 0/3 layers to GPU');
    expect(watch.layers).toBe(0);
  });
});
