/**
 * `npm test`: every layer of the suite in order, each timed, stopping at the first that fails (as `a && b` would);
 * then the table of where the time went: each layer's wall time, each vitest and Playwright project's, and the
 * slowest spec files, from the reporters in test/timing/. It is printed at the end and written to
 * test-results/timing/summary.md (docs/tests.md quotes it). `npm test -- vitest playwright` runs only the layers named.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { readRunnerTiming, type SpecTiming, TIMING_DIR } from '../test/timing/timing-record.ts';

interface Layer {
  name: string;
  command: string;
}

/** The layers, in the order they run: the cheap checks first, so that a slip fails in seconds. */
const LAYERS: Layer[] = [
  { name: 'types', command: 'tsc --noEmit' },
  { name: 'lint', command: 'eslint .' },
  { name: 'format', command: 'prettier --check .' },
  { name: 'vitest', command: 'vitest run' },
  { name: 'e2e-build', command: 'vite build --mode e2e' },
  { name: 'playwright', command: 'playwright test' },
  { name: 'bench-smoke', command: 'tsx bench/run.ts --smoke' },
];

const wanted = process.argv.slice(2);
const unknown = wanted.filter((name) => !LAYERS.some((layer) => layer.name === name));
if (unknown.length > 0) {
  console.error(`unknown layer ${unknown.join(', ')}: the layers are ${LAYERS.map((layer) => layer.name).join(', ')}`);
  process.exit(2);
}
const layers = wanted.length > 0 ? LAYERS.filter((layer) => wanted.includes(layer.name)) : LAYERS;

rmSync(TIMING_DIR, { recursive: true, force: true });
mkdirSync(TIMING_DIR, { recursive: true });
const bin = path.resolve('node_modules/.bin');
const env = { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}` };

const started = performance.now();
const ran: { name: string; seconds: number; status: number }[] = [];
for (const layer of layers) {
  console.log(`\n▶ ${layer.name}: ${layer.command}`);
  const layerStarted = performance.now();
  const result = spawnSync(layer.command, { shell: true, stdio: 'inherit', env });
  const status = result.status ?? 1;
  ran.push({ name: layer.name, seconds: secondsSince(layerStarted), status });
  if (status !== 0) break;
}
const total = secondsSince(started);

const summary = timingSummary(total, ran);
writeFileSync(path.join(TIMING_DIR, 'summary.md'), summary);
console.log(`\n${summary}`);
const failed = ran.find((layer) => layer.status !== 0);
if (failed) console.error(`✗ ${failed.name} failed (exit ${failed.status}); the layers after it did not run`);
process.exit(failed ? failed.status : 0);

function secondsSince(start: number): number {
  return Math.round((performance.now() - start) / 100) / 10;
}

/** The table of the run: layers, projects, the slowest spec files. */
function timingSummary(totalSeconds: number, layerTimes: typeof ran): string {
  const lines = [`## npm test: ${totalSeconds} s (${(totalSeconds / 60).toFixed(1)} min)`, ''];
  lines.push('| layer | seconds | exit |', '| --- | ---: | ---: |');
  for (const layer of layerTimes) lines.push(`| ${layer.name} | ${layer.seconds} | ${layer.status} |`);
  const runners = (['vitest', 'playwright'] as const).map((runner) => ({ runner, timing: readRunnerTiming(runner) }));
  lines.push('', '| project | tests run | skipped | failed | seconds |', '| --- | ---: | ---: | ---: | ---: |');
  for (const { runner, timing } of runners) {
    for (const project of timing?.projects ?? []) {
      const { ran: run, skipped, failed, seconds } = project;
      lines.push(`| ${runner} ${project.project} | ${run} | ${skipped} | ${failed} | ${seconds} |`);
    }
  }
  lines.push(
    '',
    "(a vitest project's seconds are its files' worker time, summed; a Playwright project's are wall time)",
  );
  const slowest = (runner: SpecTiming['runner'], count: number) =>
    [...(runners.find((entry) => entry.runner === runner)?.timing?.specs ?? [])]
      .sort((a, b) => b.seconds - a.seconds)
      .slice(0, count);
  for (const [runner, count] of [
    ['playwright', 20],
    ['vitest', 10],
  ] as const) {
    const specs = slowest(runner, count);
    if (specs.length === 0) continue;
    lines.push('', `| slowest ${runner} files | project | tests run | seconds |`, '| --- | --- | ---: | ---: |');
    for (const spec of specs) lines.push(`| ${spec.file} | ${spec.project} | ${spec.ran} | ${spec.seconds} |`);
  }
  return `${lines.join('\n')}\n`;
}
