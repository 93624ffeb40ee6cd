import { readFileSync } from 'node:fs';
import type { Plugin } from 'vite';
import { VitePWA } from 'vite-plugin-pwa';
import { defineConfig } from 'vitest/config';

/**
 * For the end-to-end tests: a chat and an embedding model folder whose tokenizer and config are fine but whose weights
 * are not an ONNX file, so loading them fails inside onnxruntime, as a corrupt download would (it poisons
 * transformers.js' session chain, which the engine host must recover from); and a sound copy of the tiny chat model,
 * never precached.
 */
function e2eModelFixtures(): Plugin {
  const files = ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json'];
  return {
    name: 'lantern-e2e-model-fixtures',
    generateBundle() {
      for (const file of files) {
        const source = readFileSync(`public/models/tiny-chat/${file}`);
        this.emitFile({ type: 'asset', fileName: `e2e/corrupt-chat/${file}`, source });
        // A copy that the reliability tests' server withholds at first, as if its download had failed.
        this.emitFile({ type: 'asset', fileName: `e2e/late-chat/${file}`, source });
      }
      for (const file of ['config.json', 'tokenizer.json', 'tokenizer_config.json']) {
        const source = readFileSync(`public/models/tiny-embed/${file}`);
        this.emitFile({ type: 'asset', fileName: `e2e/corrupt-embed/${file}`, source });
      }
      this.emitFile({ type: 'asset', fileName: 'e2e/corrupt-chat/onnx/model.onnx', source: 'not an ONNX model' });
      this.emitFile({ type: 'asset', fileName: 'e2e/corrupt-embed/onnx/model.onnx', source: 'not an ONNX model' });
      const weights = readFileSync('public/models/tiny-chat/onnx/model.onnx');
      this.emitFile({ type: 'asset', fileName: 'e2e/late-chat/onnx/model.onnx', source: weights });
    },
  };
}

/**
 * One build for the browser: the page (index.html), the engine worker it spawns, and the service worker
 * (sw/service-worker.ts, built by vite-plugin-pwa with the list of files to precache for offline use).
 * `--mode e2e` adds the end-to-end test harness and the benchmark page, and writes to dist-e2e/.
 */
export default defineConfig(({ mode }) => ({
  build: {
    target: 'es2022',
    outDir: mode === 'e2e' ? 'dist-e2e' : 'dist',
    rollupOptions: {
      input: {
        main: 'index.html',
        ...(mode === 'e2e' && { harness: 'test/e2e/harness.html', bench: 'bench/browser/bench.html' }),
      },
    },
  },
  worker: { format: 'es' },
  plugins: [
    mode === 'e2e' && e2eModelFixtures(),
    VitePWA({
      strategies: 'injectManifest',
      srcDir: 'sw',
      filename: 'service-worker.ts',
      injectRegister: false, // startLocalAPI() registers it, with workbox-window
      manifest: false,
      injectManifest: {
        // Everything a page needs offline: the app shell, the engine worker, onnxruntime-web and the bundled models.
        globPatterns: ['**/*.{html,js,mjs,css,wasm,onnx,json,svg}'],
        globIgnores: ['**/reference.json', 'e2e/late-chat/**'],
        // onnxruntime-web's WebAssembly binary alone is 26 MB.
        maximumFileSizeToCacheInBytes: 64 * 1024 * 1024,
        rollupFormat: 'iife',
      },
    }),
  ],
  test: {
    include: ['src/**/*.test.ts', 'sw/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['test/e2e/**'],
    // onnxruntime-node is a native addon: separate processes isolate it more reliably than worker threads.
    pool: 'forks',
    // Loading a model and generating on a shared CPU can take seconds; these bound hangs, they do not time anything.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
}));
