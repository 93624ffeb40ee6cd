import { readFileSync } from 'node:fs';
import type { Plugin } from 'vite';
import { defineConfig } from 'vitest/config';
import { withoutExpectedWarnings } from './src/vite/bundle.ts';
import { lantern } from './src/vite/index.ts';

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

/** The tests of shared behaviour (the wire, clients, structured output, tools, reasoning) that run on llama.cpp too. */
const LLAMA_CPP_SHARED_TESTS = [
  'test/chat-completions.test.ts',
  'test/completions.test.ts',
  'test/tool-calls.test.ts',
  'test/reasoning.test.ts',
  'test/responses.test.ts',
  'test/responses-tools.test.ts',
  'test/embeddings.test.ts',
  'test/embedding-paraphrases.test.ts',
  'test/sdk-errors.test.ts',
  'test/hostile-input.test.ts',
  'test/prefix-cache-isolation.test.ts',
  'test/structured-output/engine.test.ts',
  'test/structured-output/sdk-clients.test.ts',
  'test/structured-output/large-schemas.test.ts',
];

/** Vite's handling of the pages' and the benchmark worker's logs, without the warnings that need no one (bundle.ts). */
const onLog = withoutExpectedWarnings('es');

/**
 * One build for the browser: the playground page (index.html); and, through Lantern's own Vite plugin as any app
 * uses it, the service worker (sw/service-worker.ts, precaching the build for offline use) and the engine worker,
 * both built from source here. `--mode e2e` adds the end-to-end test harness and the benchmark page, and writes to
 * dist-e2e/. (dist/ is the package that `npm run build:lib` builds.)
 */
export default defineConfig(({ mode }) => ({
  build: {
    target: 'es2022',
    outDir: mode === 'e2e' ? 'dist-e2e' : 'dist-app',
    // The page's largest chunks are libraries it imports only when it needs them, knowingly: WebLLM's catalogue of
    // models (`prebuiltAppConfig`: WebLLM's whole build, 5.9 MB) for a web-llm model's files, and transformers.js'
    // ModelRegistry (540 kB). A chunk above this is new, and worth a look.
    chunkSizeWarningLimit: 6_000,
    rollupOptions: {
      input: {
        main: 'index.html',
        ...(mode === 'e2e' && {
          harness: 'test/e2e/harness.html',
          wllama3: 'test/e2e/wllama3.html',
          bench: 'bench/browser/bench.html',
          engines: 'bench/browser/engines.html',
        }),
      },
      // Rolldown times the plugins of every build and reports those that took most of it: here that is always
      // Lantern's own plugin, which builds the engine worker, the service worker and the optional encoders (some 20 s
      // of a 30 s build), as it must.
      checks: { pluginTimings: false },
      onLog,
    },
  },
  // The benchmark page's own worker (bench/browser/direct-worker.ts), in a folder of its own: it carries its own copy of
  // the engines and onnxruntime-web, which the pages never need offline.
  worker: {
    format: 'es',
    rollupOptions: {
      onLog,
      output: {
        entryFileNames: 'bench-worker/[name]-[hash].js',
        chunkFileNames: 'bench-worker/[name]-[hash].js',
        assetFileNames: 'bench-worker/[name]-[hash][extname]',
      },
    },
  },
  plugins: [
    mode === 'e2e' && e2eModelFixtures(),
    lantern({
      serviceWorker: 'sw/service-worker.ts',
      engineWorker: 'src/worker/engine-worker.ts',
      // public/models is the bundled models' source here (not copied from the package); the reliability tests'
      // withheld model must not be precached, nor the benchmark's worker.
      precache: (file) => !/^(e2e\/late-chat|bench-worker)\/|\/reference\.json$/.test(file),
    }),
  ],
  test: {
    exclude: ['test/e2e/**'],
    // onnxruntime-node and node-llama-cpp are native addons: separate processes isolate them more reliably than
    // worker threads.
    pool: 'forks',
    // Both cores (vitest's default leaves one free on a machine of two): 604 s → 409 s here (docs/tests.md).
    maxWorkers: 2,
    // The timing reporter records each file's time for the table `npm test` prints (scripts/run-tests.ts).
    reporters: ['default', './test/timing/vitest-reporter.ts'],
    // Loading a model and generating on a shared CPU can take seconds; these bound hangs, they do not time anything.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      { extends: true, test: { name: 'unit', include: ['src/**/*.test.ts', 'sw/**/*.test.ts', 'test/**/*.test.ts'] } },
      // The tests of the behaviour every engine shares, again on llama.cpp alone: the bundled models' GGUF copies.
      {
        extends: true,
        test: { name: 'llama.cpp', include: LLAMA_CPP_SHARED_TESTS, env: { LANTERN_TEST_ENGINES: 'llama.cpp' } },
      },
    ],
  },
}));
