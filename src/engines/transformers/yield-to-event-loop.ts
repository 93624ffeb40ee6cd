/** One channel for every yield: a message to itself is a task queued behind the messages already waiting. */
let channel: MessageChannel | undefined;
const resumers: (() => void)[] = [];

/**
 * Resolves on a fresh task, after the messages that were already waiting have been handled.
 *
 * Why: in a browser worker, onnxruntime-web's WebAssembly runs settle through microtasks only, so a whole generation
 * would otherwise run without the worker handling a single message, and an abort sent to it would be seen only at the
 * end. Yielding before each forward pass bounds that to one token. The yield is a message the worker posts to itself:
 * it queues behind pending port messages, costs a few microseconds, and is not clamped like a nested setTimeout.
 * `scheduler.yield()` would not do: its continuation runs before ordinary pending tasks, by design. In Node,
 * `setImmediate` is the same kind of yield.
 */
export function yieldToEventLoop(): Promise<void> {
  if (typeof setImmediate === 'function') return new Promise((resolve) => setImmediate(resolve));
  if (!channel) {
    channel = new MessageChannel();
    channel.port1.onmessage = () => resumers.shift()?.();
  }
  const { port2 } = channel;
  return new Promise((resolve) => {
    resumers.push(resolve);
    port2.postMessage(null);
  });
}
