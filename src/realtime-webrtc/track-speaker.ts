import type { RealtimeSpeaker } from '../realtime/realtime-session.ts';

/** The rate of the session's audio: PCM16 mono at 24 kHz, as the Realtime API's `audio/pcm`. */
export const SPEAKER_RATE = 24_000;
/**
 * How far ahead of the audio clock a chunk that starts after silence is scheduled: enough for the main thread to hand
 * it to the audio thread before its start passes.
 */
const LEAD_SECONDS = 0.02;

interface Scheduled {
  itemId: string;
  source: AudioBufferSourceNode;
  start: number;
  end: number;
}

/**
 * Plays the session's audio into a WebRTC track: each chunk an AudioBufferSourceNode scheduled right after the one
 * before it, into a MediaStreamAudioDestinationNode whose track the peer connection sends. `clear()` stops every
 * source at once (barge-in), and says how much of the item the caller heard.
 */
export class TrackSpeaker implements RealtimeSpeaker {
  readonly #context: AudioContext;
  readonly #destination: MediaStreamAudioDestinationNode;
  #queue: Scheduled[] = [];
  /** Where the next chunk starts, on the context's clock (0: idle). */
  #endsAt = 0;
  /** Seconds of each item played by sources that have finished (or were cleared). */
  readonly #played = new Map<string, number>();
  /** The item playing or last played since the last clear. */
  #last: string | undefined;
  #listeners: { started(itemId: string): void; stopped(itemId: string): void }[] = [];

  constructor(context: AudioContext) {
    this.#context = context;
    this.#destination = context.createMediaStreamDestination();
  }

  /** The outgoing stream: its one audio track is what the peer hears. */
  get stream(): MediaStream {
    return this.#destination.stream;
  }

  listen(listener: { started(itemId: string): void; stopped(itemId: string): void }): void {
    this.#listeners.push(listener);
  }

  play(itemId: string, samples: Int16Array): void {
    if (samples.length === 0) return;
    const buffer = this.#context.createBuffer(1, samples.length, SPEAKER_RATE);
    const channel = buffer.getChannelData(0);
    for (let i = 0; i < samples.length; i++) channel[i] = samples[i]! / 32768;
    const source = this.#context.createBufferSource();
    source.buffer = buffer;
    source.connect(this.#destination);
    const now = this.#context.currentTime;
    const idle = this.#queue.length === 0 || this.#endsAt <= now;
    const start = idle ? now + LEAD_SECONDS : this.#endsAt;
    const scheduled: Scheduled = { itemId, source, start, end: start + buffer.duration };
    this.#endsAt = scheduled.end;
    this.#queue.push(scheduled);
    this.#last = itemId;
    source.onended = () => this.#ended(scheduled);
    source.start(start);
    if (idle) for (const listener of this.#listeners) listener.started(itemId);
  }

  clear(): { itemId: string; playedMs: number } | undefined {
    const itemId = this.#last;
    const now = this.#context.currentTime;
    const queue = this.#queue;
    this.#queue = [];
    this.#endsAt = 0;
    for (const scheduled of queue) {
      scheduled.source.onended = null;
      this.#add(scheduled.itemId, Math.max(0, Math.min(now, scheduled.end) - scheduled.start));
      scheduled.source.stop();
      scheduled.source.disconnect();
    }
    this.#last = undefined;
    if (itemId === undefined) return undefined;
    return { itemId, playedMs: this.playedMs(itemId) };
  }

  playedMs(itemId: string): number {
    const now = this.#context.currentTime;
    let seconds = this.#played.get(itemId) ?? 0;
    for (const scheduled of this.#queue) {
      if (scheduled.itemId === itemId) seconds += Math.max(0, Math.min(now, scheduled.end) - scheduled.start);
    }
    return Math.round(seconds * 1000);
  }

  /** Stops the track: the call is over. */
  close(): void {
    this.clear();
    for (const track of this.#destination.stream.getTracks()) track.stop();
  }

  #add(itemId: string, seconds: number): void {
    this.#played.set(itemId, (this.#played.get(itemId) ?? 0) + seconds);
  }

  #ended(scheduled: Scheduled): void {
    const at = this.#queue.indexOf(scheduled);
    if (at < 0) return;
    this.#queue.splice(at, 1);
    this.#add(scheduled.itemId, scheduled.end - scheduled.start);
    scheduled.source.disconnect();
    if (this.#queue.length === 0) {
      this.#endsAt = 0;
      for (const listener of this.#listeners) listener.stopped(scheduled.itemId);
    }
  }
}
