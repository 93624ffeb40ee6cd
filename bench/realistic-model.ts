import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ModelProfile } from '../src/engines/model-profile.ts';
import { REALISTIC } from './models.ts';

export { REALISTIC };

/**
 * The benchmarks' realistic model: a LLaMA with random weights and a 32,000-token vocabulary, sized so that a token
 * costs about what a real 0.5–1B model costs on a laptop (10–30 ms on one WebAssembly thread here). It is 175 MB, so
 * it is generated on first use by scripts/fixtures/bench_llama.py (Debian's python3-torch and python3-onnx) into a
 * git-ignored folder, and reused from there.
 */
export const REALISTIC_DIR = fileURLToPath(new URL('./.models/bench-llama', import.meta.url));
const GENERATOR = fileURLToPath(new URL('../scripts/fixtures/bench_llama.py', import.meta.url));
/** Where the benchmark server serves it to the browser. */
export const REALISTIC_URL = '/bench-models/bench-llama';
/** The generator writes this file last: its presence means the folder is complete. */
const WORDS = `${REALISTIC_DIR}/words.json`;

/** Builds the model unless it is there; undefined when it is, else why it could not be built. */
export function ensureRealisticModel(log: (message: string) => void): string | undefined {
  if (existsSync(WORDS)) return undefined;
  log(`building the realistic model into ${REALISTIC_DIR} (once; about a minute)`);
  const run = spawnSync('/usr/bin/python3', [GENERATOR, REALISTIC_DIR], { stdio: ['ignore', 'inherit', 'pipe'] });
  if (run.status === 0 && existsSync(WORDS)) return undefined;
  const reason = run.error?.message ?? run.stderr?.toString().trim().split('\n').at(-1) ?? `exit ${run.status}`;
  return `could not build it with /usr/bin/python3 (needs python3-torch, python3-onnx): ${reason}`;
}

/** The words of its vocabulary, each one token with its leading space: text made of them has a known length. */
export const realisticWords = (): string[] => JSON.parse(readFileSync(WORDS, 'utf8')) as string[];

/** A profile serving only the model at `folder` under `id`, on the CPU, with a prefix cache of `prefixCacheBytes`. */
export function singleModelProfile(id: string, folder: string, prefixCacheBytes?: number): ModelProfile {
  const candidate = { engine: 'transformers', model: folder, dtype: 'fp32', device: 'cpu' } as const;
  return {
    [id]: {
      task: 'chat',
      created: 0,
      candidates: [prefixCacheBytes === undefined ? candidate : { ...candidate, prefixCacheBytes }],
    },
  };
}
