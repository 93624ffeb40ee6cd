import { describe, expect, it } from 'vitest';
import { EngineError } from '../engine-interface/index.ts';
import { TaskQueue } from './task-queue.ts';

const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

describe('TaskQueue', () => {
  it('runs tasks one at a time in arrival order, past failures', async () => {
    const queue = new TaskQueue();
    const log: string[] = [];
    const task =
      (name: string, fail = false) =>
      async () => {
        log.push(`start ${name}`);
        await tick();
        log.push(`end ${name}`);
        if (fail) throw new Error(name);
        return name;
      };
    const results = await Promise.allSettled([queue.run(task('a')), queue.run(task('b', true)), queue.run(task('c'))]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(log).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
  });

  it('answers a waiting task aborted by its caller at once, skips it, and still never overlaps tasks', async () => {
    const queue = new TaskQueue();
    let running = 0;
    let overlap = false;
    const ran: string[] = [];
    const task = (name: string) => async () => {
      running += 1;
      overlap ||= running > 1;
      ran.push(name);
      await tick();
      running -= 1;
      return name;
    };
    const abort = new AbortController();
    const first = queue.run(task('first'));
    const aborted = queue.run(task('aborted'), abort.signal);
    const third = queue.run(task('third'));
    abort.abort();
    const error = await aborted.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EngineError);
    expect((error as EngineError).kind).toBe('aborted');
    expect(await Promise.all([first, third])).toEqual(['first', 'third']);
    expect(ran).toEqual(['first', 'third']);
    expect(overlap).toBe(false);
  });

  it('answers a task whose signal is already aborted at once, without waiting behind the running one', async () => {
    const queue = new TaskQueue();
    let finishFirst!: () => void;
    const first = queue.run(() => new Promise<string>((resolve) => (finishFirst = () => resolve('first'))));
    let ran = false;
    const late = queue.run(async () => (ran = true), AbortSignal.abort());
    // The first task is still running: the answer cannot have waited for it.
    await expect(late).rejects.toMatchObject({ name: 'EngineError', kind: 'aborted' });
    finishFirst();
    expect(await first).toBe('first');
    expect(await queue.run(async () => 'next')).toBe('next');
    expect(ran).toBe(false);
  });
});
