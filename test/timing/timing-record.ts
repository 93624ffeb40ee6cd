import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Where each part of `npm test` spends its time, written by the run itself: the layer runner (scripts/run-tests.ts)
 * records each layer's wall time, and the vitest and Playwright reporters beside this file record each spec file's.
 * scripts/run-tests.ts turns them into the table that docs/tests.md quotes and `.ci/run` prints.
 */
export const TIMING_DIR = path.resolve('test-results/timing');

/** One spec file's time in one project (a vitest project, or a Playwright project). */
export interface SpecTiming {
  runner: 'vitest' | 'playwright';
  project: string;
  /** Relative to the repository. */
  file: string;
  /** The file's wall time: from its first test's start to its last test's end (hooks and fixtures included). */
  seconds: number;
  /** Tests that ran (passed or failed), and those skipped. */
  ran: number;
  skipped: number;
  failed: number;
}

/** One project's wall time: from its first file's start to its last file's end. */
export interface ProjectTiming {
  runner: 'vitest' | 'playwright';
  project: string;
  seconds: number;
  ran: number;
  skipped: number;
  failed: number;
}

export interface RunnerTiming {
  specs: SpecTiming[];
  projects: ProjectTiming[];
}

export function writeRunnerTiming(runner: SpecTiming['runner'], timing: RunnerTiming): void {
  mkdirSync(TIMING_DIR, { recursive: true });
  writeFileSync(path.join(TIMING_DIR, `${runner}.json`), `${JSON.stringify(timing, null, 1)}\n`);
}

export function readRunnerTiming(runner: SpecTiming['runner']): RunnerTiming | undefined {
  try {
    return JSON.parse(readFileSync(path.join(TIMING_DIR, `${runner}.json`), 'utf8')) as RunnerTiming;
  } catch {
    return undefined;
  }
}

/** A span of time from test results: the earliest start and the latest end, in seconds. */
export class Span {
  private start = Infinity;
  private end = -Infinity;
  ran = 0;
  skipped = 0;
  failed = 0;

  add(startMs: number, durationMs: number): void {
    this.start = Math.min(this.start, startMs);
    this.end = Math.max(this.end, startMs + durationMs);
  }

  get seconds(): number {
    return this.end > this.start ? Math.round((this.end - this.start) / 100) / 10 : 0;
  }
}
