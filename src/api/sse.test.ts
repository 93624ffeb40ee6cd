import { describe, expect, it } from 'vitest';
import { eventStream } from './sse.ts';

const errorBody = (error: unknown) => ({
  error: { message: String((error as Error).message), type: 'server_error', param: null, code: null },
});

describe('eventStream', () => {
  it('writes data-only frames, then [DONE], then closes', async () => {
    const response = await eventStream(
      async (send) => {
        send({ a: 1 });
        send({ b: 'two\nlines' });
      },
      { errorBody },
    );
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(await response.text()).toBe('data: {"a":1}\n\ndata: {"b":"two\\nlines"}\n\ndata: [DONE]\n\n');
  });

  it('throws a failure that happens before the first event, so it gets its own status', async () => {
    await expect(
      eventStream(
        async () => {
          throw new Error('context too long');
        },
        { errorBody },
      ),
    ).rejects.toThrow('context too long');
  });

  it('ends with an error frame, and no [DONE], when the producer fails after the first event', async () => {
    const response = await eventStream(
      async (send) => {
        send({ a: 1 });
        await new Promise((resolve) => setTimeout(resolve, 1));
        throw new Error('device lost');
      },
      { errorBody },
    );
    expect(await response.text()).toBe(
      'data: {"a":1}\n\ndata: {"error":{"message":"device lost","type":"server_error","param":null,"code":null}}\n\n',
    );
  });

  it('returns at the first event while the producer is still running', async () => {
    let finish!: () => void;
    const response = await eventStream(
      async (send) => {
        send({ first: true });
        await new Promise<void>((resolve) => (finish = resolve));
        send({ last: true });
      },
      { errorBody },
    );
    const reader = response.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: {"first":true}\n\n');
    finish();
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      rest += new TextDecoder().decode(chunk.value);
    }
    expect(rest).toBe('data: {"last":true}\n\ndata: [DONE]\n\n');
  });

  it('hands the producer an aborted signal when the request was aborted before it started', async () => {
    const request = new AbortController();
    request.abort();
    let seen: boolean | undefined;
    await eventStream(
      async (send, signal) => {
        seen = signal.aborted;
        send({});
      },
      { signal: request.signal, errorBody },
    );
    expect(seen).toBe(true);
  });

  it.each(['cancelling the body', 'aborting the request'])('aborts the producer on %s', async (how) => {
    const request = new AbortController();
    let producerSignal!: AbortSignal;
    const stopped = new Promise<void>((resolve) => {
      void eventStream(
        async (send, signal) => {
          producerSignal = signal;
          send({ started: true });
          await new Promise((r) => signal.addEventListener('abort', r));
          resolve();
        },
        { signal: request.signal, errorBody },
      ).then((response) => (how === 'aborting the request' ? request.abort() : response.body!.cancel()));
    });
    await stopped;
    expect(producerSignal.aborted).toBe(true);
  });
});
