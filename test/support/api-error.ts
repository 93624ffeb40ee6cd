import { ApiError } from '../../src/api/errors.ts';

/** The ApiError that `fn` throws (a parser refusing a body, a limiter refusing a request); fails the test otherwise. */
export function apiError(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  throw new Error('expected an ApiError, but nothing was thrown');
}
