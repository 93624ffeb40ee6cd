import { describe, expect, it } from 'vitest';
import { fromStatus, fromStreamError, scrub, unreachable } from './upstream-errors.ts';

const context = {
  backend: 'remote:llama@http://10.0.0.2:8000/v1',
  secrets: ['sk-secret-0123456789', 'Bearer tok-abcdefghij'],
};
const json = (body: unknown) => JSON.stringify(body);

describe('a server error as an engine error', () => {
  it.each([
    [400, 'invalid_request', undefined],
    [413, 'invalid_request', undefined],
    [422, 'invalid_request', undefined],
    [401, 'upstream_error', false],
    [403, 'upstream_error', false],
    [404, 'upstream_error', false],
    [408, 'upstream_unavailable', true],
    [500, 'upstream_error', true],
    [502, 'upstream_error', true],
    [503, 'upstream_unavailable', true],
    [504, 'upstream_error', true],
    [429, 'rate_limited', undefined],
  ] as const)('%i is %s (retry %s)', (status, kind, retry) => {
    const error = fromStatus(status, json({ error: { message: 'said the server' } }), new Headers(), context);
    expect(error.kind).toBe(kind);
    expect(error.retry).toBe(retry);
    expect(error.backend).toBe(context.backend);
    expect(error.message).toContain('said the server');
  });

  it('keeps the param of a 400, and knows a context overflow', () => {
    const error = fromStatus(
      400,
      json({
        error: {
          message: 'too long',
          type: 'invalid_request_error',
          param: 'messages',
          code: 'context_length_exceeded',
        },
      }),
      new Headers(),
      context,
    );
    expect(error).toMatchObject({ kind: 'context_length_exceeded', param: 'messages', message: 'too long' });
  });

  it("reads vLLM's flat error, FastAPI's detail, a bare string and a page that is not JSON", () => {
    const say = (body: string) => fromStatus(400, body, new Headers(), context).message;
    expect(say(json({ object: 'error', message: 'flat', type: 'BadRequestError', code: 400 }))).toBe('flat');
    expect(say(json({ detail: [{ msg: 'field required' }] }))).toContain('field required');
    expect(say(json({ error: 'plain words' }))).toBe('plain words');
    expect(say('<html>Bad Gateway</html>')).toBe('<html>Bad Gateway</html>');
  });

  it("passes a 429's retry headers on, and honours a server's own x-should-retry", () => {
    const headers = new Headers({
      'retry-after-ms': '1500',
      'retry-after': '2',
      'x-ratelimit-remaining-requests': '0',
      'content-type': 'application/json',
    });
    expect(fromStatus(429, '{}', headers, context).headers).toEqual({
      'retry-after-ms': '1500',
      'retry-after': '2',
      'x-ratelimit-remaining-requests': '0',
    });
    expect(fromStatus(500, '{}', new Headers({ 'x-should-retry': 'false' }), context).retry).toBe(false);
    expect(fromStatus(503, '{}', new Headers({ 'x-should-retry': 'false' }), context).retry).toBe(false);
  });

  it('never repeats a configured secret, whole or its token alone', () => {
    const echoed = `Incorrect API key provided: sk-secret-0123456789 (header Bearer tok-abcdefghij, token tok-abcdefghij)`;
    for (const error of [
      fromStatus(401, json({ error: { message: echoed } }), new Headers(), context),
      fromStatus(400, echoed, new Headers(), context),
      fromStreamError({ message: echoed }, context),
      unreachable(new Error(echoed), context),
    ]) {
      expect(error.message).not.toContain('sk-secret-0123456789');
      expect(error.message).not.toContain('tok-abcdefghij');
      expect(error.message).toContain('[redacted]');
    }
    expect(scrub('nothing to hide', context.secrets)).toBe('nothing to hide');
  });

  it("says what Node's fetch put in its cause (the connection's error code)", () => {
    const cause = Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED', message: 'x' } });
    expect(unreachable(cause, context)).toMatchObject({ kind: 'upstream_unavailable', retry: true });
    expect(unreachable(cause, context).message).toContain('ECONNREFUSED');
  });
});
