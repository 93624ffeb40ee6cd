import type { WireObject } from './types.ts';

/** Where a call's output goes: typed events, or a server's chunks as it sent them. */
export interface OutputListeners {
  /** Chat or transcript events: whichever the call emits. */
  onEvent?: ((event: never) => void) | undefined;
  onServerChunk?: ((chunk: WireObject) => void) | undefined;
}

/**
 * The caller's options, watched for output: `started()` says whether any event or server chunk has been passed on,
 * after which a call can no longer move to another candidate (or be sent again) without the caller hearing it twice.
 * The one way the layer that may try a call again (the router's walk) knows whether it still may.
 */
export function watchOutput<O extends OutputListeners>(callerOptions: O): { options: O; started: () => boolean } {
  let started = false;
  const options: O = { ...callerOptions };
  const { onEvent, onServerChunk } = callerOptions;
  if (onEvent) {
    options.onEvent = (event) => {
      // Progress (how far a transcription has read) is not output: a call sent again reports it again, harmlessly.
      if ((event as { type?: string }).type !== 'progress') started = true;
      onEvent(event);
    };
  }
  if (onServerChunk) {
    options.onServerChunk = (chunk) => {
      started = true;
      onServerChunk(chunk);
    };
  }
  return { options, started: () => started };
}
