import { ApiError } from '../../src/api/errors.ts';

/** The ApiError that `fn` throws (a request parser refusing a body, say); fails the test when it throws none. */
export function apiError(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  throw new Error('expected an ApiError (a 400), but nothing was thrown');
}
