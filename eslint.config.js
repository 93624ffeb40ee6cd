// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * Imports point one way (docs/layout.md): each rule lists what a folder must not reach into, and says why. From the
 * bottom up: the engine interface; tools, grammar and generation; the engines; the models (router, profiles); the
 * worker, the API, the service worker and the page.
 */
const UPPER = ['**/api/**', '**/keys/**', '**/worker/**', '**/client/**', '**/sw/**', '**/playground/**'];
const boundaries = [
  {
    files: ['src/bytes/**'],
    patterns: ['../*'],
    why: 'src/bytes is a leaf every layer may import (byte chunks joined, a stream read within a limit): it imports none.',
  },
  {
    files: ['src/engine-interface/**'],
    patterns: [...UPPER, '../*', '!../engine-interface'],
    why: 'src/engine-interface is what the API and the engines share: plain types and errors, importing no layer.',
  },
  {
    files: ['src/tools/**'],
    patterns: [...UPPER, '**/engines/**', '**/models/**', '**/grammar/**', '**/generation/**'],
    why: 'src/tools writes tool definitions into prompts and reads calls out of replies, for any engine: it knows none.',
  },
  {
    files: ['src/grammar/**'],
    patterns: [...UPPER, '**/engines/**', '**/models/**', '**/generation/**', '@huggingface/*', '@mlc-ai/web-llm'],
    why: 'src/grammar turns schemas and regular expressions into grammars over a vocabulary: it knows no engine or model.',
  },
  {
    files: ['src/generation/**'],
    patterns: [...UPPER, '**/engines/**', '**/models/**', '@huggingface/*', '@mlc-ai/*'],
    why: 'src/generation is the token-level core every engine plugs into (sampling, masks, log probabilities, the decode loop): it knows no engine.',
  },
  {
    files: ['src/inputs/**', 'src/audio/**'],
    patterns: [...UPPER, '**/engines/**', '**/models/**', '**/grammar/**', '**/generation/**'],
    why: "src/inputs and src/audio read a request's images and audio within their limits, for whichever engine runs them.",
  },
  {
    files: ['src/engines/**'],
    patterns: [...UPPER, 'hono', 'hono/*'],
    why: 'src/engines run models and know nothing of HTTP.',
  },
  {
    files: ['src/models/**'],
    patterns: [...UPPER, '@huggingface/*', '@mlc-ai/*'],
    why: 'src/models names models and routes requests to candidates, through the engine registry: it loads no engine library itself.',
  },
  {
    files: ['src/api/**'],
    patterns: [
      '**/engines/**',
      // src/models (not the route folder src/api/models): its files are all named model-* or public-view.
      '**/models/model-*',
      '**/models/public-view*',
      '**/grammar/**',
      '**/generation/**',
      '**/worker/**',
      '**/client/**',
      '**/sw/**',
      '@huggingface/*',
      '@mlc-ai/*',
    ],
    why: 'src/api knows the engine interface (src/engine-interface), never an engine, a worker or a browser page.',
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
      // Downloads (lantern.storage): the store, and prefetching, which reads an engine's file metadata (transformers.js'
      // registry, web-llm's prebuilt list) on demand but never loads a model. The engine registry: the engines'
      // descriptors, light by rule (the service worker bundles them too), for what the page says of a candidate
      // (`candidateLabel`).
      '!**/engines/model-files.ts',
      '!**/engines/model-downloads.ts',
      '!**/engines/engine-registry.ts',
      '**/generation/**',
      '**/grammar/**',
      '@huggingface/*',
      '@mlc-ai/*',
    ],
    why: 'src/client is the page side: it talks to the service worker and the engine worker, and never loads an engine.',
  },
  {
    files: ['src/playground/**'],
    patterns: ['../*', '!../client', '../client/*', '!../client/index.ts', '!../bytes', '@huggingface/*', '@mlc-ai/*'],
    why:
      'The playground is an app of Lantern: it uses lantern/client (src/client/index.ts) and the wire, like any other ' +
      'app (and src/bytes, a leaf of plain byte helpers, rather than a copy of its own).',
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
      '!**/engines/local-engine.ts',
      '**/generation/**',
      '**/grammar/**',
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
    patterns: [...UPPER, '**/engine-interface/**', '**/engines/**', '**/models/**'],
    why: 'src/keys is a leaf: key storage and checking only.',
  },
  {
    files: ['src/storage/**'],
    patterns: ['../*'],
    why: 'src/storage is a leaf: IndexedDB connections for the stores, knowing nothing of what they keep.',
  },
  {
    files: ['src/downloads/**'],
    patterns: [
      ...UPPER,
      '**/engines/**',
      '**/models/**',
      '**/grammar/**',
      '**/generation/**',
      '@huggingface/*',
      '@mlc-ai/*',
    ],
    why: 'src/downloads stores files for offline use (resumed, verified, within the quota), whatever engine reads them.',
  },
  {
    files: ['src/response-store/**'],
    patterns: [...UPPER, '**/engine-interface/**', '**/engines/**', '**/models/**'],
    why: "src/response-store is a leaf: it keeps records of the Responses API, whose shape is src/api's business.",
  },
  {
    files: ['src/document-store/**'],
    patterns: [...UPPER, '**/engine-interface/**', '**/engines/**', '**/models/**', '**/file-search/**'],
    why: 'src/document-store is a leaf: tables of records per key, knowing nothing of files or vector stores.',
  },
  {
    files: ['src/documents/**', 'src/document-search/**'],
    patterns: [...UPPER, '**/engine-interface/**', '**/engines/**', '**/models/**', '**/file-search/**'],
    why: 'src/documents reads files into chunks and src/document-search ranks chunks: neither knows models or storage.',
  },
  {
    files: ['src/file-search/**'],
    patterns: [...UPPER, '**/engines/**', '**/models/**', '**/grammar/**', '**/generation/**', '@huggingface/*'],
    why: 'src/file-search keeps and indexes files for the API, and embeds through the engine interface, never an engine.',
  },
  {
    files: ['src/realtime/**'],
    patterns: [
      ...UPPER,
      '**/engine-interface/**',
      '**/engines/**',
      '**/models/**',
      '**/generation/**',
      '**/realtime-webrtc/**',
      'ws',
    ],
    why: "src/realtime is the Realtime API's protocol over Lantern's own /v1 routes (a client of them), carried by any transport: it imports no layer but src/audio, no DOM and no socket.",
  },
  {
    files: ['src/realtime-webrtc/**'],
    patterns: ['**/engines/**', '**/models/**', '**/worker/**', '**/sw/**', '**/playground/**', '**/client/**'],
    why: "src/realtime-webrtc is a page's answering peer (and the service worker's hand-off to it): it reaches the models only through /v1, as the session's requests.",
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
  // Tests are outside the layers: a unit test may build its fixture with the library its layer never imports.
  ...boundaries.map(({ files, patterns, why }) => ({
    files,
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: patterns, message: why }] }],
    },
  })),
);
