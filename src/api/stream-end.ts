/**
 * The same stream, calling `done` once when it ends, fails, or is cancelled by its reader: for holding something
 * (a rate-limit slot, an abort watcher) exactly as long as a streamed answer lasts.
 */
export function onStreamEnd(source: ReadableStream<Uint8Array>, done: () => void): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let called = false;
  const finish = () => {
    if (called) return;
    called = true;
    done();
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done: ended, value } = await reader.read();
        if (ended) {
          finish();
          controller.close();
        } else {
          controller.enqueue(value);
        }
      } catch (error) {
        finish();
        controller.error(error);
      }
    },
    async cancel(reason) {
      finish();
      await reader.cancel(reason);
    },
  });
}

/** Whether a response is an event stream (its body is the answer as it is generated). */
export const isEventStream = (response: Response) =>
  response.body !== null && (response.headers.get('content-type')?.startsWith('text/event-stream') ?? false);
