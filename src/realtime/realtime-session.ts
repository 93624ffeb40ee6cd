/**
 * CONTRACT SKELETON (replaced by the session helper before it lands): the public surface every transport codes
 * against. See /work/tasks/realtime-contract.md.
 */

/** A Realtime server event as sent on the wire (`type` plus its fields). */
export interface RealtimeServerEvent {
  type: string;
  event_id: string;
  [field: string]: unknown;
}

/**
 * Where assistant audio goes when the transport carries audio beside the events (WebRTC's outgoing track). Without a
 * speaker the session sends audio as `response.output_audio.delta` events (WebSocket).
 */
export interface RealtimeSpeaker {
  /** Queues `samples` (PCM16 mono at 24 kHz) of item `itemId`'s audio; plays at once when idle. */
  play(itemId: string, samples: Int16Array): void;
  /**
   * Stops at once and drops everything queued. Returns the item that was playing (or last played) and how many
   * milliseconds of it were heard, or undefined when nothing was played since the last clear.
   */
  clear(): { itemId: string; playedMs: number } | undefined;
  /** Milliseconds of `itemId`'s audio played so far. */
  playedMs(itemId: string): number;
  /** The session's listeners: the speaker calls `started` when sound begins after silence, `stopped` when its queue runs dry. */
  listen(listener: { started(itemId: string): void; stopped(itemId: string): void }): void;
}

export interface RealtimeSessionOptions {
  /**
   * Makes one request of the Lantern API as the session's key: `path` like `/v1/chat/completions`, `init` as for
   * `fetch` (method, headers except Authorization, body, signal). The transport binds the credentials.
   */
  request(path: string, init: RequestInit): Promise<Response>;
  /** Sends one server event to the client (the data channel, or the socket). */
  send(event: RealtimeServerEvent): void;
  /** WebRTC's outgoing track; absent for WebSocket (audio then travels as events). */
  speaker?: RealtimeSpeaker | undefined;
  /** The session as the client secret or the call configured it (the wire's `session` object of `session.update`), or undefined. */
  session?: unknown;
  /** The model the URL or the secret named (`gpt-realtime`, …). */
  model: string;
  /** Called once when the session ends by itself (an unrecoverable error); the transport then closes. */
  onClose?: ((reason: string) => void) | undefined;
  now?: (() => number) | undefined;
}

/** One Realtime session: the Realtime API's event protocol over Lantern's own /v1 routes. */
export class RealtimeSession {
  constructor(options: RealtimeSessionOptions) {
    void options;
  }
  /** Sends `session.created`; call once the transport can carry events. */
  open(): void {
    throw new Error('realtime session: not built yet');
  }
  /** One client event, as the JSON text the client sent. */
  receive(text: string): void {
    void text;
    throw new Error('realtime session: not built yet');
  }
  /** Microphone audio from a track (WebRTC): PCM16 mono at 24 kHz, through the same input buffer and VAD as `input_audio_buffer.append`. */
  appendAudio(samples: Int16Array): void {
    void samples;
    throw new Error('realtime session: not built yet');
  }
  /** The transport closed: running work is aborted. */
  close(): void {
    throw new Error('realtime session: not built yet');
  }
}
