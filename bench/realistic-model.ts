import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ModelProfile } from '../src/models/model-profile.ts';
import { REALISTIC } from './models.ts';

export { REALISTIC };

/**
 * The benchmarks' realistic model: a LLaMA with random weights and a 32,000-token vocabulary, sized so that a token
 * costs about what a real 0.5–1B model costs on a laptop (10–30 ms on one WebAssembly thread here). It is 175 MB, so
 * it is generated on first use by scripts/fixtures/bench_llama.py (Debian's python3-torch and python3-onnx) into a
 * git-ignored folder, and reused from there. The smoke pass (`npm run bench:smoke`) builds the same generator's small
 * variant (`--smoke`, a few MB) instead.
 */
export const REALISTIC_DIR = fileURLToPath(new URL('./.models/bench-llama', import.meta.url));
const SMOKE_DIR = fileURLToPath(new URL('./.models/bench-llama-smoke', import.meta.url));
const GENERATOR = fileURLToPath(new URL('../scripts/fixtures/bench_llama.py', import.meta.url));
const PYTHON = '/usr/bin/python3';
/** Where the benchmark server serves it to the browser. */
export const REALISTIC_URL = '/bench-models/bench-llama';

/** The model the realistic section runs: its folder, words to write prompts with, and what it is. */
export interface RealisticModel {
  dir: string;
  /** Words of its vocabulary, each one token with its leading space: text made of them has a known length. */
  words: string[];
  /** Set when it is not the generated model but one standing in for it (the smoke pass without python3-torch). */
  standIn?: string;
}

/** Why this machine's Python cannot run the generator (its modules missing), or undefined when it can. */
function missingPython(): string | undefined {
  const probe = spawnSync(PYTHON, ['-c', 'import torch, onnx, regex'], { stdio: ['ignore', 'ignore', 'pipe'] });
  if (probe.status === 0) return undefined;
  const said = probe.error?.message ?? probe.stderr?.toString().trim().split('\n').at(-1) ?? `exit ${probe.status}`;
  return `${PYTHON} cannot import torch, onnx and regex (apt-get install python3-torch python3-onnx python3-regex): ${said}`;
}

/**
 * The realistic model, built unless it is there (the small variant when `smoke`). Without the generator's Python
 * modules, `skipped` says why; the smoke pass then runs the section on `standIn` (a bundled model and words for it), so
 * that its code still runs. A generator that fails with its modules installed is a broken bench: that throws.
 */
export function prepareRealisticModel(
  log: (message: string) => void,
  options: { smoke: boolean; standIn?: RealisticModel },
): { model: RealisticModel | undefined; skipped: string | undefined } {
  const dir = options.smoke ? SMOKE_DIR : REALISTIC_DIR;
  // The generator writes words.json last: its presence means the folder is complete.
  const words = `${dir}/words.json`;
  const ready = () => ({
    model: { dir, words: JSON.parse(readFileSync(words, 'utf8')) as string[] },
    skipped: undefined,
  });
  if (existsSync(words)) return ready();
  const missing = missingPython();
  if (missing) {
    return { model: options.standIn && { ...options.standIn, standIn: missing }, skipped: missing };
  }
  log(`building the realistic model${options.smoke ? "'s small variant" : ''} into ${dir} (once; seconds)`);
  const args = [GENERATOR, dir, ...(options.smoke ? ['--smoke'] : [])];
  const run = spawnSync(PYTHON, args, { stdio: ['ignore', 'inherit', 'pipe'] });
  if (run.status === 0 && existsSync(words)) return ready();
  const reason = run.error?.message ?? run.stderr?.toString().trim() ?? `exit ${run.status}`;
  throw new Error(`scripts/fixtures/bench_llama.py failed (its Python modules are installed): ${reason}`);
}

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
