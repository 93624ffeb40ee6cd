import { describe, expect, it } from 'vitest';
import { EngineError } from '../engine-interface/index.ts';
import { ApiError } from './errors.ts';
import { parseJsonObject, readBody } from './request-body.ts';

/** Reads a request's body (within `maxBytes`) and parses it, as `rateLimit` and a route do together. */
const readJsonObject = async (request: Request, maxBytes: number) => parseJsonObject(await readBody(request, maxBytes));

const post = (body: BodyInit | null, headers: Record<string, string> = {}) =>
  new Request('http://x/v1/embeddings', { method: 'POST', body, headers, duplex: 'half' } as RequestInit);

async function rejection(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

describe('readBody and parseJsonObject', () => {
  it('reads a JSON object', async () => {
    expect(await readJsonObject(post('{"a": [1, "ü"]}'), 100)).toEqual({ a: [1, 'ü'] });
  });

  it.each([
    ['an empty body', null, /empty/],
    ['invalid JSON', '{"a": ', /could not parse/],
    ['a JSON array', '[1, 2]', /must be a JSON object/],
    ['JSON null', 'null', /must be a JSON object/],
    ['a JSON string', '"hi"', /must be a JSON object/],
  ])('refuses %s with a 400', async (_name, body, message) => {
    const error = await rejection(readJsonObject(post(body), 100));
    expect(error.status).toBe(400);
    expect(error.message).toMatch(message);
  });

  it('refuses bytes that are not UTF-8', async () => {
    const error = await rejection(readJsonObject(post(new Uint8Array([0x7b, 0xff, 0x7d])), 100));
    expect(error.message).toMatch(/UTF-8/);
  });

  it('refuses a declared Content-Length over the limit without reading the body', async () => {
    const body = new ReadableStream({
      pull: () => {
        throw new Error('the body must not be read');
      },
    });
    const error = await rejection(readJsonObject(post(body, { 'content-length': '101' }), 100));
    expect(error.code).toBe('request_too_large');
  });

  it('stops reading a streamed body as soon as it passes the limit', async () => {
    let pulled = 0;
    const body = new ReadableStream<Uint8Array>({
      pull: (controller) => {
        pulled += 1;
        controller.enqueue(new Uint8Array(64).fill(0x20));
      },
    });
    const error = await rejection(readJsonObject(post(body), 100));
    expect(error.code).toBe('request_too_large');
    expect(pulled).toBeLessThan(5);
  });

  describe('in a browser without Request.body streams (Firefox)', () => {
    /** A request as Firefox's service worker sees it: the body is there, but `request.body` is undefined. */
    const withoutBodyStream = (request: Request) => {
      Object.defineProperty(request, 'body', { value: undefined });
      return request;
    };

    it('reads the body another way', async () => {
      expect(await readJsonObject(withoutBodyStream(post('{"model": "m"}')), 100)).toEqual({ model: 'm' });
    });

    it('still refuses a body over the limit, and an empty one', async () => {
      const large = await rejection(readJsonObject(withoutBodyStream(post(`"${'x'.repeat(200)}"`)), 100));
      expect(large.code).toBe('request_too_large');
      const empty = await rejection(readJsonObject(withoutBodyStream(post(null)), 100));
      expect(empty.message).toMatch(/empty/);
    });
  });

  it('refuses a body that takes longer than its deadline to arrive, and stops reading it', async () => {
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => controller.enqueue(new TextEncoder().encode('{"model":')),
      // Nothing more ever comes: a client sending one byte now and then, or none.
      cancel: () => void (cancelled = true),
    });
    const error = await rejection(readBody(post(body), 100, 50));
    expect(error.status).toBe(400);
    expect(error.code).toBe('request_timeout');
    expect(error.message).toMatch(/0.05 s/);
    expect(cancelled).toBe(true);
  });

  it('takes a body that breaks off for a client that went away, not for a fault of its own', async () => {
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        controller.enqueue(new TextEncoder().encode('{"model":'));
        controller.error(new Error('aborted'));
      },
    });
    const error = await readBody(post(body), 100, 1000).catch((e: unknown) => e);
    expect(EngineError.from(error).kind).toBe('aborted');
  });
});
