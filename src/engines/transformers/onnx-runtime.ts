/// <reference types="vite/client" />
import plainMjs from 'onnxruntime-web/ort-wasm-simd-threaded.mjs?url';
import plainWasm from 'onnxruntime-web/ort-wasm-simd-threaded.wasm?url';
import webgpuMjs from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.mjs?url';
import webgpuWasm from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.wasm?url';
import { EngineError } from '../../engine-interface/index.ts';
import type { RealmDevice } from '../model-loaders.ts';

/**
 * onnxruntime-web's WebAssembly builds, by the device the worker runs on (issue 26, item 5). transformers.js imports
 * `onnxruntime-web/webgpu`, whose default build (asyncify, 27 MB) carries the WebGPU execution provider; where no
 * WebGPU is used, the plain build (14 MB) runs the same CPU kernels, loads in half the time and decodes faster
 * (stories260K in Chromium: 813 against 1,787 ms to load, 1,197 against 930 tokens/s). The JavaScript side of
 * `onnxruntime-web/webgpu` loads either: it calls the WebGPU build's extra hooks only where they exist, and
 * transformers.js itself picks the plain build for Safari below 26 without WebGPU.
 */
const BUILDS: Record<RealmDevice, { wasm: string; mjs: string }> = {
  wasm: { wasm: plainWasm, mjs: plainMjs },
  webgpu: { wasm: webgpuWasm, mjs: webgpuMjs },
};

/**
 * Where the engine worker keeps the one build its device runs. The service worker precaches neither binary (see
 * `isOnnxRuntimeBinary` in src/vite/precache-manifest.ts, which as build tooling imports no engine): each visitor downloads only the build it runs, once.
 */
export const ONNX_RUNTIME_CACHE = 'lantern-onnxruntime';

/** The build for `device`, by absolute URL: the `.wasm` binary and the `.mjs` factory that instantiates it. */
export function onnxRuntimeBuild(device: RealmDevice, base: string): { wasm: string; mjs: string } {
  const build = BUILDS[device];
  return { wasm: new URL(build.wasm, base).href, mjs: new URL(build.mjs, base).href };
}

/** The build's binary, and whether it is kept in the worker's cache (so that the worker starts offline), or why not. */
interface RuntimeBinary {
  binary: ArrayBuffer;
  /** True once the binary is in the cache; otherwise why it is not (a full disk, a private window). */
  kept: true | string;
}

/**
 * The binary at `url`, from the worker's cache, or fetched and kept there; the other binaries of the cache (an older
 * version, the other device's build) are dropped. Undefined where there is no Cache Storage (an insecure origin):
 * onnxruntime-web then fetches it itself. Rejects with a `download_failed` EngineError that says what to do where it
 * is neither stored nor reachable (offline before the download ended).
 */
async function cachedBinary(url: string): Promise<RuntimeBinary | undefined> {
  if (typeof caches === 'undefined') return undefined;
  const cache = await caches.open(ONNX_RUNTIME_CACHE).catch(() => undefined);
  const cached = await cache?.match(url).catch(() => undefined);
  let binary = await cached?.arrayBuffer();
  let kept: true | string = true;
  if (!binary) {
    binary = await download(url);
    kept = cache
      ? await cache.put(url, new Response(binary, { headers: { 'content-type': 'application/wasm' } })).then(
          () => true as const,
          (error: unknown) => `it could not be stored (${error instanceof Error ? error.message : String(error)})`,
        )
      : 'the browser gave no cache to store it in';
  }
  if (cache) for (const request of await cache.keys()) if (request.url !== url) await cache.delete(request);
  return { binary, kept };
}

/** Fetches the build: failures become an EngineError that says what is missing and what to do. */
async function download(url: string): Promise<ArrayBuffer> {
  const name = new URL(url).pathname.split('/').pop();
  const failed = (why: string, cause?: unknown) =>
    new EngineError(
      'download_failed',
      `Lantern's runtime for this device (onnxruntime-web, ${name}) is not stored yet and could not be downloaded ` +
        `(${why}). Connect to the network and try again: it is kept from then on (\`lantern.offlineReady\` says when ` +
        'this device can work offline).',
      { cause, retry: true },
    );
  let response: Response;
  try {
    response = await fetch(url);
  } catch (error) {
    throw failed(error instanceof Error ? error.message : String(error), error);
  }
  if (!response.ok) throw failed(`HTTP ${response.status}`);
  try {
    return await response.arrayBuffer();
  } catch (error) {
    throw failed(error instanceof Error ? error.message : String(error), error);
  }
}

/** onnxruntime-web's WebAssembly settings, as transformers.js exposes them (`env.backends.onnx.wasm`). */
export interface OnnxWasmEnv {
  wasmPaths?: unknown;
  wasmBinary?: ArrayBufferLike | Uint8Array;
}

/** onnxruntime-web, ready to instantiate: whether its binary is kept for offline starts, and how to let go of it. */
export interface OnnxRuntime {
  /** True when the build is in the worker's cache, so that the worker starts without the network; else why not. */
  kept: true | string;
  /** To call once a session exists (see loadOnnxRuntime). */
  release(): void;
}

/**
 * Points onnxruntime-web at the build for `device` and hands it the binary from the worker's cache, downloaded and
 * kept there on a first visit. It must be settled before the first session is created: onnxruntime-web instantiates
 * its WebAssembly once per realm, with the settings it finds then. Rejects (a `download_failed` EngineError) only
 * where the binary is neither stored nor reachable; nothing is instantiated then, so a later call can try again.
 *
 * `release`, to call once a session exists: onnxruntime-web's module keeps the binary it was given for as long as the
 * worker lives, which the instance no longer needs (its threads get the compiled module, not the bytes).
 * @see https://github.com/microsoft/onnxruntime/blob/main/js/web/lib/wasm/wasm-factory.ts
 */
export async function loadOnnxRuntime(wasm: OnnxWasmEnv, device: RealmDevice, base: string): Promise<OnnxRuntime> {
  const build = onnxRuntimeBuild(device, base);
  wasm.wasmPaths = build;
  const stored = await cachedBinary(build.wasm);
  if (!stored) return { kept: 'this origin has no Cache Storage (not a secure context)', release: () => {} };
  const { binary, kept } = stored;
  wasm.wasmBinary = binary;
  return {
    kept,
    release() {
      // Detaching the buffer frees its bytes wherever it is referenced. Instantiation copied them when it began.
      if (binary.byteLength > 0) structuredClone(binary, { transfer: [binary] });
      delete wasm.wasmBinary;
    },
  };
}
