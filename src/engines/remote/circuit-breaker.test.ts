import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from './circuit-breaker.ts';

describe('CircuitBreaker', () => {
  const clock = () => {
    const time = { now: 1_000 };
    return { time, breaker: new CircuitBreaker(30_000, () => time.now) };
  };

  it('lets every call through while the server answers', () => {
    const { breaker } = clock();
    for (let i = 0; i < 3; i++) {
      expect(breaker.tryAcquire()).toBe(true);
      breaker.succeeded();
    }
    expect(breaker.state).toBe('closed');
    expect(breaker.retryInMs()).toBe(0);
  });

  it('leaves a failed server alone for the cool-down, then lets one probe through', () => {
    const { time, breaker } = clock();
    breaker.tryAcquire();
    breaker.failed();
    expect(breaker.state).toBe('open');
    expect(breaker.tryAcquire()).toBe(false);
    time.now += 10_000;
    expect(breaker.retryInMs()).toBe(20_000);
    expect(breaker.tryAcquire()).toBe(false);

    time.now += 20_000;
    expect(breaker.state).toBe('half-open');
    expect(breaker.available).toBe(true);
    expect(breaker.tryAcquire()).toBe(true); // the probe
    expect(breaker.available).toBe(false);
    expect(breaker.tryAcquire()).toBe(false); // others wait for it
    expect(breaker.retryInMs()).toBeGreaterThan(0);
    breaker.succeeded();
    expect(breaker.state).toBe('closed');
    expect(breaker.tryAcquire()).toBe(true);
  });

  it('opens again for a full cool-down when the probe fails', () => {
    const { time, breaker } = clock();
    breaker.failed();
    time.now += 30_000;
    expect(breaker.tryAcquire()).toBe(true);
    breaker.failed();
    expect(breaker.state).toBe('open');
    expect(breaker.retryInMs()).toBe(30_000);
  });

  it('lets the next caller probe when a probe was abandoned by its client', () => {
    const { time, breaker } = clock();
    breaker.failed();
    time.now += 30_000;
    expect(breaker.tryAcquire()).toBe(true);
    breaker.released();
    expect(breaker.tryAcquire()).toBe(true);
  });
});
