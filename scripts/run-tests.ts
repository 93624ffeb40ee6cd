/**
 * `npm test`: every layer of the suite in order, each timed, stopping at the first that fails (as `a && b` would);
 * then the table of where the time went: each layer's wall time, each vitest and Playwright project's, and the
 * slowest spec files, from the reporters in test/timing/. It is printed at the end and written to
 * test-results/timing/summary.md (docs/tests.md quotes it). `npm test -- vitest playwright` runs only the layers named.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { readRunnerTiming, type SpecTiming, TIMING_DIR } from '../test/timing/timing-record.ts';

interface Layer {
  name: string;
  command: string;
}

/**
 * The layers, in the order they run: the cheap checks first, so that a slip fails in seconds. The layers of one stage
 * run side by side (each of the checks keeps one core busy; their output is printed as each ends).
 */
const STAGES: Layer[][] = [
  [
    { name: 'types', command: 'tsc --noEmit' },
    { name: 'lint', command: 'eslint .' },
    { name: 'format', command: 'prettier --check .' },
  ],
  [{ name: 'vitest', command: 'vitest run' }],
  [{ name: 'e2e-build', command: 'vite build --mode e2e' }],
  [{ name: 'playwright', command: 'playwright test' }],
  [{ name: 'bench-smoke', command: 'tsx bench/run.ts --smoke' }],
];
const LAYERS = STAGES.flat();

const wanted = process.argv.slice(2);
const unknown = wanted.filter((name) => !LAYERS.some((layer) => layer.name === name));
if (unknown.length > 0) {
  console.error(`unknown layer ${unknown.join(', ')}: the layers are ${LAYERS.map((layer) => layer.name).join(', ')}`);
  process.exit(2);
}
const stages = STAGES.map((stage) =>
  stage.filter((layer) => wanted.length === 0 || wanted.includes(layer.name)),
).filter((stage) => stage.length > 0);

rmSync(TIMING_DIR, { recursive: true, force: true });
mkdirSync(TIMING_DIR, { recursive: true });
const bin = path.resolve('node_modules/.bin');
const env = { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}` };

const started = performance.now();
const ran: { name: string; seconds: number; status: number }[] = [];
for (const stage of stages) {
  const alone = stage.length === 1;
  const results = await Promise.all(stage.map((layer) => runLayer(layer, alone)));
  ran.push(...results);
  if (results.some((result) => result.status !== 0)) break;
}
const total = secondsSince(started);

const summary = timingSummary(total, ran);
writeFileSync(path.join(TIMING_DIR, 'summary.md'), summary);
console.log(`\n${summary}`);
const failed = ran.find((layer) => layer.status !== 0);
if (failed) console.error(`✗ ${failed.name} failed (exit ${failed.status}); the layers after it did not run`);
process.exit(failed ? failed.status : 0);

/** Runs one layer: its output as it comes when it runs alone, else all of it (one block) when it ends. */
function runLayer(layer: Layer, alone: boolean): Promise<{ name: string; seconds: number; status: number }> {
  console.log(`\n▶ ${layer.name}: ${layer.command}${alone ? '' : ' (beside the others of its stage)'}`);
  const layerStarted = performance.now();
  const child = spawn(layer.command, { shell: true, stdio: alone ? 'inherit' : ['ignore', 'pipe', 'pipe'], env });
  const output: Buffer[] = [];
  child.stdout?.on('data', (chunk: Buffer) => output.push(chunk));
  child.stderr?.on('data', (chunk: Buffer) => output.push(chunk));
  return new Promise((resolve) => {
    child.on('close', (code) => {
      const seconds = secondsSince(layerStarted);
      if (!alone) console.log(`\n◀ ${layer.name} (${seconds} s, exit ${code})\n${Buffer.concat(output).toString()}`);
      resolve({ name: layer.name, seconds, status: code ?? 1 });
    });
  });
}

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
