import type { Reporter, TestCase, TestResult } from '@playwright/test/reporter';
import path from 'node:path';
import { Span, writeRunnerTiming } from './timing-record.ts';

/**
 * Records each spec file's wall time per Playwright project (test-results/timing/playwright.json), for the table
 * `npm test` prints at its end. A file's time runs from its first test's start to its last test's end, so with two
 * workers it is the file's own span, not the sum of its tests.
 */
export default class TimingReporter implements Reporter {
  private readonly specs = new Map<string, Span>();
  private readonly projects = new Map<string, Span>();

  onTestEnd(test: TestCase, result: TestResult): void {
    const project = test.parent.project()?.name ?? '';
    const file = path.relative(process.cwd(), test.location.file);
    for (const span of [at(this.specs, `${project}\0${file}`), at(this.projects, project)]) {
      if (result.status === 'skipped') {
        span.skipped++;
        continue;
      }
      span.add(result.startTime.getTime(), result.duration);
      // A retried test counts once as run; each failed attempt counts as a failure.
      if (result.retry === 0) span.ran++;
      if (result.status === 'failed' || result.status === 'timedOut') span.failed++;
    }
  }

  onEnd(): void {
    writeRunnerTiming('playwright', {
      specs: [...this.specs].map(([key, span]) => {
        const [project, file] = key.split('\0') as [string, string];
        return { runner: 'playwright', project, file, ...counts(span) };
      }),
      projects: [...this.projects].map(([project, span]) => ({ runner: 'playwright', project, ...counts(span) })),
    });
  }

  printsToStdio(): boolean {
    return false;
  }
}

function at(spans: Map<string, Span>, key: string): Span {
  let span = spans.get(key);
  if (!span) spans.set(key, (span = new Span()));
  return span;
}

function counts(span: Span) {
  return { seconds: span.seconds, ran: span.ran, skipped: span.skipped, failed: span.failed };
}
