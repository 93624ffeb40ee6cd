import { APIError } from 'openai';
import { ApiError } from '../../src/api/errors.ts';
import { EngineError } from '../../src/engine-interface/index.ts';

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

/** What the openai SDK threw for a refused call: its status, param and message; fails the test if it answered. */
export async function sdkRefusal(call: Promise<unknown>) {
  const error = (await call.then(
    () => undefined,
    (e: unknown) => e,
  )) as APIError;
  if (!(error instanceof APIError)) throw new Error(`expected the SDK's APIError, got ${String(error)}`);
  return { status: error.status, param: error.param, code: error.code, message: error.message };
}

/** The message of the 400 (`invalid_request`) an engine call refused with, naming `param`; fails the test otherwise. */
export async function engineRefusal(call: Promise<unknown>, param: string): Promise<string> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof EngineError)) throw new Error(`expected an EngineError, got ${String(error)}`);
  if (error.kind !== 'invalid_request' || error.param !== param) {
    throw new Error(`expected a refusal naming ${param}, got ${error.kind} naming ${error.param}: ${error.message}`);
  }
  return error.message;
}
