import type { InitProgressReport } from '@mlc-ai/web-llm';
import type { LoadProgress } from '../../engine-interface/index.ts';

/**
 * The phases of a web-llm load, as its `initProgressCallback` reports them (its texts, lib/index.js 0.2.86), each a
 * pass from 0 to 1 of its own: the weights' shards fetched into the Cache API (tvmjs' `fetchTensorCacheInternal`,
 * only for shards not cached yet: a cached model skips it), the shards loaded from the cache onto the GPU (the same
 * function), then the shaders compiled (`asyncLoadWebGPUPipelines`). Then `Finish loading on WebGPU - …`.
 */
const PHASES = [
  { file: 'fetch-weights', text: 'Fetching param cache[' },
  { file: 'load-weights', text: 'Loading model from cache[' },
  { file: 'compile-shaders', text: 'Loading GPU shader modules[' },
] as const;

type Phase = (typeof PHASES)[number]['file'];

/**
 * Where each phase lies in the overall progress, in percent: a download takes most of a first load; loading from the
 * cache most of a later one.
 */
const SPANS: Record<'download' | 'cached', Partial<Record<Phase, [number, number]>>> = {
  download: { 'fetch-weights': [0, 80], 'load-weights': [80, 95], 'compile-shaders': [95, 100] },
  cached: { 'load-weights': [0, 85], 'compile-shaders': [85, 100] },
};

/**
 * web-llm's progress reports as LoadProgress events, under the public model ID: each phase opens with `initiate`
 * (naming it in `file`: `fetch-weights`, `load-weights`, `compile-shaders`) and a download with `download`, goes on
 * with `progress` (its own percent; `loaded` of `total` shards, or shader modules) and closes with `done`; every
 * report also gives the overall `progress_total`, which only rises, and whose `loaded` and `total` count the bytes
 * downloaded (of `downloadBytes`, the candidate's estimate; 0 of 0 for a model that was cached). A cached model
 * reports no download.
 */
export function webLLMProgress(
  model: string,
  downloadBytes: number,
  onProgress: (progress: LoadProgress) => void,
): (report: InitProgressReport) => void {
  let phase: Phase | undefined;
  let downloading = false;
  let overall = 0;
  const total = () => (downloading ? downloadBytes : 0);
  const report = (progress: number, fetched: number) => {
    overall = Math.max(overall, progress);
    onProgress({ status: 'progress_total', model, progress: overall, loaded: Math.round(fetched), total: total() });
  };
  return ({ progress, text }) => {
    if (text.startsWith('Finish loading')) {
      if (phase) onProgress({ status: 'done', model, file: phase });
      phase = undefined;
      report(100, total());
      return;
    }
    const found = PHASES.find((p) => text.startsWith(p.text));
    if (!found) return;
    if (found.file !== phase) {
      if (phase) onProgress({ status: 'done', model, file: phase });
      phase = found.file;
      if (phase === 'fetch-weights') downloading = true;
      onProgress({ status: 'initiate', model, file: phase });
      if (phase === 'fetch-weights') onProgress({ status: 'download', model, file: phase });
    }
    const [done, of] = /\[(\d+)\/(\d+)\]/.exec(text)?.slice(1).map(Number) ?? [0, 0];
    onProgress({ status: 'progress', model, file: phase, loaded: done!, total: of!, progress: progress * 100 });
    const [from, to] = SPANS[downloading ? 'download' : 'cached'][phase]!;
    const fetched = phase === 'fetch-weights' ? progress * downloadBytes : total();
    report(from + (to - from) * progress, fetched);
  };
}
