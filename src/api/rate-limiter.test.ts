import { describe, expect, it } from 'vitest';
import { apiError as refused } from '../../test/support/api-error.ts';
import { ApiError } from './errors.ts';
import { formatDuration, RateLimiter } from './rate-limiter.ts';

describe('RateLimiter', () => {
  it('allows a burst of requestsPerMinute, then refills one request every 60/rpm seconds', () => {
    let now = 0;
    const limiter = new RateLimiter(
      { requestsPerMinute: 3, concurrentGenerations: 10, maxGenerations: 100 },
      () => now,
    );
    for (let i = 0; i < 3; i++) limiter.admit('k').release();
    const error = refused(() => limiter.admit('k'));
    expect(error.status).toBe(429);
    expect(error.code).toBe('rate_limit_exceeded');
    expect(error.headers).toMatchObject({
      'retry-after-ms': '20000',
      'retry-after': '20',
      'x-ratelimit-limit-requests': '3',
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-reset-requests': '1m0s',
    });
    now += 19_999;
    expect(refused(() => limiter.admit('k')).headers['retry-after-ms']).toBe('1');
    now += 1;
    const lease = limiter.admit('k');
    expect(lease.headers['x-ratelimit-remaining-requests']).toBe('0');
  });

  it('keeps keys apart', () => {
    const limiter = new RateLimiter({ requestsPerMinute: 1, concurrentGenerations: 10, maxGenerations: 100 }, () => 0);
    limiter.admit('a');
    expect(() => limiter.admit('b')).not.toThrow();
    expect(() => limiter.admit('a')).toThrow(ApiError);
  });

  it('caps generations in flight until a lease is released, without spending a request on a refusal', () => {
    const limiter = new RateLimiter({ requestsPerMinute: 100, concurrentGenerations: 2, maxGenerations: 100 }, () => 0);
    const first = limiter.admit('k');
    limiter.admit('k');
    const error = refused(() => limiter.admit('k'));
    expect(error.message).toMatch(/concurrent requests/);
    expect(error.headers['retry-after-ms']).toBe('1000');
    expect(error.headers['x-ratelimit-remaining-requests']).toBe('98');
    first.release();
    first.release(); // idempotent: a second release must not free a slot it does not hold
    limiter.admit('k');
    expect(() => limiter.admit('k')).toThrow(ApiError);
  });

  it('bounds the generations of all keys together, the engine queue, counting only admitted requests that occupy it', () => {
    const limiter = new RateLimiter({ requestsPerMinute: 100, concurrentGenerations: 2, maxGenerations: 3 }, () => 0);
    const occupied = (key: string) => {
      const lease = limiter.admit(key);
      lease.occupyEngine();
      return lease;
    };
    const leases = [occupied('a'), occupied('a'), occupied('b')];
    // Admitted under its key's limits (its body still arriving), it holds none of the engine's slots yet.
    const waiting = limiter.admit('c');
    const error = refused(() => waiting.occupyEngine());
    expect(error.code).toBe('engine_busy');
    expect(error.headers['retry-after-ms']).toBe('1000');
    // The refusal gave the key its request back.
    expect(error.headers['x-ratelimit-remaining-requests']).toBe('100');
    waiting.release();
    leases[0]!.release();
    expect(() => occupied('c')).not.toThrow();
  });

  it('lets any number of keys wait for their bodies without taking an engine slot', () => {
    const limiter = new RateLimiter({ requestsPerMinute: 100, concurrentGenerations: 1, maxGenerations: 2 }, () => 0);
    const slow = Array.from({ length: 16 }, (_, i) => limiter.admit(`slow-${i}`));
    const other = limiter.admit('other');
    expect(() => other.occupyEngine()).not.toThrow();
    for (const lease of slow) lease.release(); // never occupied: nothing of the engine's to give back
    const second = limiter.admit('second');
    second.occupyEngine();
    expect(() => {
      const third = limiter.admit('third');
      third.occupyEngine();
    }).toThrow(ApiError);
  });
});

describe('formatDuration', () => {
  it('writes durations as the OpenAI API does', () => {
    expect(formatDuration(20)).toBe('20ms');
    expect(formatDuration(1500)).toBe('1.5s');
    expect(formatDuration(360_000)).toBe('6m0s');
  });
});
