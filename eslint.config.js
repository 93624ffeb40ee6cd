// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Imports point one way (see ../shared/DESIGN.md "Layers"): each rule lists what a folder must not reach into. */
const boundaries = [
  {
    files: ['src/engine/**'],
    patterns: ['**/api/**', '**/engines/**', '**/keys/**', '**/worker/**', '**/client/**', '**/sw/**'],
    why: 'src/engine is the engine interface: plain types, importing no layer.',
  },
  {
    files: ['src/api/**'],
    patterns: ['**/engines/**', '**/worker/**', '**/client/**', '**/sw/**', '@huggingface/*', '@mlc-ai/*'],
    why: 'src/api knows the engine interface (src/engine), never an engine, a worker or a browser page.',
  },
  {
    files: ['src/engines/**'],
    patterns: ['**/api/**', '**/keys/**', '**/worker/**', '**/client/**', '**/sw/**', 'hono', 'hono/*'],
    why: 'src/engines run models and know nothing of HTTP.',
  },
  {
    files: ['src/worker/**'],
    patterns: ['**/api/**', '**/keys/**', '**/client/**', '**/sw/**'],
    why: 'src/worker runs engines behind the engine interface and knows nothing of HTTP, keys or the page.',
  },
  {
    files: ['src/client/**'],
    patterns: [
      '**/api/**',
      '**/sw/**',
      '**/engines/**',
      '!**/engines/model-profile.ts',
      '!**/engines/model-registry.ts',
      // Downloads (lantern.storage): the store, and prefetching, which reads an engine's file metadata (transformers.js'
      // registry, web-llm's prebuilt list) on demand but never loads a model.
      '!**/engines/model-files.ts',
      '!**/engines/model-downloads.ts',
      '@huggingface/*',
      '@mlc-ai/*',
    ],
    why: 'src/client is the page side: it talks to the service worker and the engine worker, and never loads an engine.',
  },
  {
    files: ['src/playground/**'],
    patterns: ['../*', '!../client', '../client/*', '!../client/index.ts', '@huggingface/*', '@mlc-ai/*'],
    why: 'The playground is an app of Lantern: it uses lantern/client (src/client/index.ts) and the wire, like any other app.',
  },
  {
    files: ['src/vite/**'],
    patterns: ['../**'],
    why: 'src/vite is build tooling that runs in Node: it bundles the browser entries, never imports them.',
  },
  {
    files: ['sw/**'],
    patterns: [
      '**/engines/**',
      '!**/engines/model-router.ts',
      '!**/engines/local-engine.ts',
      '!**/engines/model-profile.ts',
      '**/client/**',
      '@huggingface/*',
      '@mlc-ai/*',
    ],
    why:
      'sw/ is thin: it wires the handler to fetch events, routes with the model router, and reaches the local models ' +
      'only through the engine worker; it knows no engine internals or page code.',
  },
  {
    files: ['src/keys/**'],
    patterns: ['**/api/**', '**/engine/**', '**/engines/**', '**/worker/**', '**/client/**', '**/sw/**'],
    why: 'src/keys is a leaf: key storage and checking only.',
  },
  {
    files: ['src/storage/**'],
    patterns: ['../*'],
    why: 'src/storage is a leaf: IndexedDB connections for the stores, knowing nothing of what they keep.',
  },
  {
    files: ['src/audio/**'],
    patterns: ['**/api/**', '**/engines/**', '**/keys/**', '**/worker/**', '**/client/**', '**/sw/**'],
    why: 'src/audio is a leaf: decoding, resampling and windowing audio, for whichever layer transcribes it.',
  },
  {
    files: ['src/response-store/**'],
    patterns: ['**/api/**', '**/engine/**', '**/engines/**', '**/keys/**', '**/worker/**', '**/client/**', '**/sw/**'],
    why: "src/response-store is a leaf: it keeps records of the Responses API, whose shape is src/api's business.",
  },
];

export default tseslint.config(
  {
    ignores: [
      'dist/',
      'dist-app/',
      'dist-e2e/',
      'dist-e2e-next/',
      'dev-dist/',
      'test-results/',
      'coverage/',
      'public/models/',
      // Generated models and whatever scratch sits beside them (git-ignored).
      'bench/.models/',
      'node_modules/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { projectService: false } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': ['error', { allow: ['error', 'warn'] }],
    },
  },
  {
    files: ['scripts/**', 'test/**', 'bench/**'],
    rules: { 'no-console': 'off' },
  },
  ...boundaries.map(({ files, patterns, why }) => ({
    files,
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: patterns, message: why }] }],
    },
  })),
);
