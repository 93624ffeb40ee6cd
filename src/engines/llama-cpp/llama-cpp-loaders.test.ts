import { describe, expect, it } from 'vitest';
import { chatRuntimeOf } from './llama-cpp-loaders.ts';
import type { BrowserFeatures } from './wllama-device.ts';

const chromium: BrowserFeatures = { jspi: true, memory64: true, adapterFeatures: new Set(['shader-f16']) };
const swiftShader: BrowserFeatures = { ...chromium, adapterFeatures: new Set() };
const firefox: BrowserFeatures = { jspi: false, memory64: true, adapterFeatures: undefined };

describe('the browser runtime of a llama.cpp chat candidate', () => {
  it('is wllama 3 on WebGPU where llama.cpp runs there, and wllama 2 elsewhere, by default', () => {
    expect(chatRuntimeOf({}, chromium)).toEqual({ runtime: 'wllama3', device: 'webgpu' });
    expect(chatRuntimeOf({}, swiftShader)).toMatchObject({ runtime: 'wllama2', device: 'wasm' });
    expect(chatRuntimeOf({}, firefox)).toMatchObject({ runtime: 'wllama2', device: 'wasm' });
  });

  it('is wllama 3 where the candidate asks for it, on its CPU build where WebGPU cannot run it', () => {
    expect(chatRuntimeOf({ runtime: 'wllama3' }, chromium)).toEqual({ runtime: 'wllama3', device: 'webgpu' });
    expect(chatRuntimeOf({ runtime: 'wllama3' }, swiftShader)).toEqual({
      runtime: 'wllama3',
      device: 'wasm',
      reason: expect.stringMatching(/shader-f16/),
    });
    // A browser without JSPI cannot load wllama 3's build: the candidate fails to load, and its chain goes on.
    expect(() => chatRuntimeOf({ runtime: 'wllama3' }, firefox)).toThrow(/JSPI/);
  });

  it('is wllama 2 where the candidate asks for it, even where wllama 3 would run on WebGPU', () => {
    expect(chatRuntimeOf({ runtime: 'wllama2' }, chromium)).toMatchObject({ runtime: 'wllama2', device: 'wasm' });
  });
});
