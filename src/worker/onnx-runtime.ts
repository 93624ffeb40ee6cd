/// <reference types="vite/client" />
import plainMjs from 'onnxruntime-web/ort-wasm-simd-threaded.mjs?url';
import plainWasm from 'onnxruntime-web/ort-wasm-simd-threaded.wasm?url';
import webgpuMjs from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.mjs?url';
import webgpuWasm from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.wasm?url';
import type { DeviceInfo } from './protocol.ts';

/**
 * onnxruntime-web's WebAssembly builds, by the device the worker runs on (issue 26, item 5). transformers.js imports
 * `onnxruntime-web/webgpu`, whose default build (asyncify, 27 MB) carries the WebGPU execution provider; where no
 * WebGPU is used, the plain build (14 MB) runs the same CPU kernels, loads in half the time and decodes faster
 * (stories260K in Chromium: 813 against 1,787 ms to load, 1,197 against 930 tokens/s). The JavaScript side of
 * `onnxruntime-web/webgpu` loads either: it calls the WebGPU build's extra hooks only where they exist, and
 * transformers.js itself picks the plain build for Safari below 26 without WebGPU.
 */
const BUILDS: Record<DeviceInfo['device'], { wasm: string; mjs: string }> = {
  wasm: { wasm: plainWasm, mjs: plainMjs },
  webgpu: { wasm: webgpuWasm, mjs: webgpuMjs },
};

/**
 * Where the engine worker keeps the one build its device runs. The service worker precaches neither binary (see
 * `isOnnxRuntimeBinary` in src/vite/precache-manifest.ts): each visitor downloads only the build it runs, once.
 */
export const ONNX_RUNTIME_CACHE = 'lantern-onnxruntime';

/** The build for `device`, by absolute URL: the `.wasm` binary and the `.mjs` factory that instantiates it. */
export function onnxRuntimeBuild(device: DeviceInfo['device'], base: string): { wasm: string; mjs: string } {
  const build = BUILDS[device];
  return { wasm: new URL(build.wasm, base).href, mjs: new URL(build.mjs, base).href };
}

/**
 * The binary at `url`, from the worker's cache, or fetched and kept there; the other binaries of the cache (an older
 * version, the other device's build) are dropped. Undefined where it can be neither read nor fetched (offline before
 * the first download; no Cache Storage, as on an insecure origin): onnxruntime-web then fetches it itself, and fails
 * as it did before this cache existed.
 */
async function cachedBinary(url: string): Promise<ArrayBuffer | undefined> {
  if (typeof caches === 'undefined') return undefined;
  try {
    const cache = await caches.open(ONNX_RUNTIME_CACHE);
    const cached = await cache.match(url);
    let binary = await cached?.arrayBuffer();
    if (!binary) {
      const response = await fetch(url);
      if (!response.ok) return undefined;
      binary = await response.arrayBuffer();
      // Not kept (storage full, a private window) is not fatal: this visit runs; the next downloads it again.
      await cache.put(url, new Response(binary, { headers: { 'content-type': 'application/wasm' } })).catch(() => {});
    }
    for (const request of await cache.keys()) if (request.url !== url) await cache.delete(request);
    return binary;
  } catch {
    return undefined;
  }
}

/** onnxruntime-web's WebAssembly settings, as transformers.js exposes them (`env.backends.onnx.wasm`). */
export interface OnnxWasmEnv {
  wasmPaths?: unknown;
  wasmBinary?: ArrayBufferLike | Uint8Array;
}

/**
 * Points onnxruntime-web at the build for `device` and hands it the binary from the worker's cache. It must be
 * settled before the first session is created: onnxruntime-web instantiates its WebAssembly once per realm, with the
 * settings it finds then. Never rejects.
 *
 * @returns `release`, to call once a session exists: onnxruntime-web's module keeps the binary it was given for as
 *   long as the worker lives, which the instance no longer needs (its threads get the compiled module, not the bytes).
 * @see https://github.com/microsoft/onnxruntime/blob/main/js/web/lib/wasm/wasm-factory.ts
 */
export async function loadOnnxRuntime(
  wasm: OnnxWasmEnv,
  device: DeviceInfo['device'],
  base: string,
): Promise<{ release(): void }> {
  const build = onnxRuntimeBuild(device, base);
  wasm.wasmPaths = build;
  const binary = await cachedBinary(build.wasm);
  if (!binary) return { release: () => {} };
  wasm.wasmBinary = binary;
  return {
    release() {
      // Detaching the buffer frees its bytes wherever it is referenced. Instantiation copied them when it began.
      if (binary.byteLength > 0) structuredClone(binary, { transfer: [binary] });
      delete wasm.wasmBinary;
    },
  };
}
