import path from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';
import type { ProjectTiming, SpecTiming } from './timing-record.ts';
import { writeRunnerTiming } from './timing-record.ts';

/**
 * Records each test file's time per vitest project (test-results/timing/vitest.json), for the table `npm test`
 * prints at its end. A file's time is what it held a worker for: its environment, its imports and its tests and hooks.
 * vitest runs files of both projects side by side, so a project's figure is the sum of its files' times (worker time),
 * not a wall time; the layer's wall time is the layer runner's.
 */
export default class TimingReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const specs: SpecTiming[] = testModules.map((module) => {
      const tests = [...module.children.allTests()];
      const { environmentSetupDuration, prepareDuration, collectDuration, setupDuration, duration } =
        module.diagnostic();
      const held = environmentSetupDuration + prepareDuration + collectDuration + setupDuration + duration;
      return {
        runner: 'vitest',
        project: module.project.name,
        file: path.relative(process.cwd(), module.moduleId),
        seconds: Math.round(held / 100) / 10,
        ran: tests.filter((test) => test.result().state !== 'skipped').length,
        skipped: tests.filter((test) => test.result().state === 'skipped').length,
        failed: tests.filter((test) => test.result().state === 'failed').length,
      };
    });
    const projects = new Map<string, ProjectTiming>();
    for (const spec of specs) {
      const project = projects.get(spec.project) ?? {
        runner: 'vitest',
        project: spec.project,
        seconds: 0,
        ran: 0,
        skipped: 0,
        failed: 0,
      };
      project.seconds = Math.round((project.seconds + spec.seconds) * 10) / 10;
      project.ran += spec.ran;
      project.skipped += spec.skipped;
      project.failed += spec.failed;
      projects.set(spec.project, project);
    }
    writeRunnerTiming('vitest', { specs, projects: [...projects.values()] });
  }
}
