import { defineConfig } from 'vitest/config';

export default defineConfig({
  build: {
    // The package entry as an ES module library; runtime dependencies stay imports for the app's bundler to resolve.
    lib: { entry: 'src/index.ts', formats: ['es'], fileName: 'lantern' },
    rollupOptions: { external: [/^@huggingface\//, /^hono/, /^zod/, /^node:/] },
    target: 'es2022',
    copyPublicDir: false,
  },
  test: {
    include: ['src/**/*.test.ts', 'sw/**/*.test.ts', 'test/**/*.test.ts'],
    // onnxruntime-node is a native addon: separate processes isolate it more reliably than worker threads.
    pool: 'forks',
    // Loading a model and generating on a shared CPU can take seconds; these bound hangs, they do not time anything.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
