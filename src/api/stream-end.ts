/** Whether a response is an event stream (its body is the answer as it is generated). */
export const isEventStream = (response: Response) =>
  response.body !== null && (response.headers.get('content-type')?.startsWith('text/event-stream') ?? false);
