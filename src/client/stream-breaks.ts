/**
 * What a streamed answer ends with when the service worker that streamed it stopped, in Lantern's wire format (an SSE
 * error event, as `src/api/sse.ts` writes one): the same retryable `engine_unavailable` error, with the same opening
 * words, as a stream whose host tab closed.
 */
const STOPPED = {
  error: {
    message:
      'The engine went away while this request was running: the service worker that answered it stopped (the tab ' +
      'hosting the models crashed and took it along, or the browser stopped it). Retry the request.',
    type: 'server_error',
    param: null,
    code: 'engine_unavailable',
  },
};

/**
 * `response`, but when its event stream breaks between two events, it ends with the SSE error event a client reads as
 * Lantern's retryable error, instead of a bare network error. Chromium may run the service worker in the same process
 * as the tab that hosts the engine, so a renderer crash there (DevTools' `Page.crash`) stops the service worker in the
 * middle of another tab's answer, which then breaks, and no code of Lantern's is left to say why but the page's own.
 * A stream cut inside an event, and the caller's own abort, break as before; any other answer is left as it is.
 */
export function endBrokenStreams(response: Response, signal: AbortSignal): Response {
  if (!response.body || !response.headers.get('content-type')?.startsWith('text/event-stream')) return response;
  const reader = response.body.getReader();
  /** The last two bytes read: an event ends with a blank line ("\n\n"). */
  let tail = '\n\n';
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        if (value.length > 0) tail = (tail + String.fromCharCode(...value.subarray(-2))).slice(-2);
        controller.enqueue(value);
      } catch (error) {
        if (signal.aborted || tail !== '\n\n') return controller.error(error);
        controller.enqueue(new TextEncoder().encode(`data: ${JSON.stringify(STOPPED)}\n\n`));
        controller.close();
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}
