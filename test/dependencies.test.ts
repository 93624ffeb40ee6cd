import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/** A package.json, read from disk: not every package exports it. */
const manifest = (path: string) => JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8'));

describe('dependencies', () => {
  it('self-hosts the onnxruntime-web build that transformers.js was made for', () => {
    // The engine worker (built into the package, so a devDependency here) serves onnxruntime-web's .wasm and .mjs
    // itself (no CDN): they must be the exact version whose JavaScript transformers.js bundles, or the runtime fails
    // to start. Bump both together.
    const transformers = manifest('../node_modules/@huggingface/transformers/package.json');
    const ours = manifest('../package.json');
    const installed = manifest('../node_modules/onnxruntime-web/package.json');
    expect(ours.devDependencies['onnxruntime-web']).toBe(transformers.dependencies['onnxruntime-web']);
    expect(installed.version).toBe(transformers.dependencies['onnxruntime-web']);
  });
});
