/**
 * The input audio buffer: PCM16 at 24 kHz on the session's audio clock (samples since the session began), kept from
 * `start` on. With voice activity on, audio older than the prefix padding is dropped while nobody speaks, so a silent
 * call holds a fraction of a second; with it off the client commits and the buffer holds at most
 * {@link MAX_INPUT_BUFFER_MS}.
 */
import { SESSION_RATE } from './pcm-audio.ts';

/** OpenAI's bound on the input buffer: 15 minutes of audio. */
export const MAX_INPUT_BUFFER_MS = 15 * 60 * 1000;
export const MAX_INPUT_BUFFER_SAMPLES = (MAX_INPUT_BUFFER_MS / 1000) * SESSION_RATE;

export class InputAudioBuffer {
  #chunks: Int16Array[] = [];
  #length = 0;
  /** The session-clock sample of the buffer's first sample. */
  #start = 0;

  /** The session-clock sample just after the buffer's last one (the audio clock). */
  get end(): number {
    return this.#start + this.#length;
  }

  get length(): number {
    return this.#length;
  }

  /** Whether `samples` more fit within {@link MAX_INPUT_BUFFER_SAMPLES}. */
  fits(samples: number): boolean {
    return this.#length + samples <= MAX_INPUT_BUFFER_SAMPLES;
  }

  append(samples: Int16Array): void {
    if (samples.length === 0) return;
    this.#chunks.push(samples);
    this.#length += samples.length;
  }

  /** Drops what lies before session-clock sample `sample`. */
  dropBefore(sample: number): void {
    let drop = Math.min(this.#length, sample - this.#start);
    if (drop <= 0) return;
    this.#start += drop;
    this.#length -= drop;
    while (drop > 0) {
      const first = this.#chunks[0]!;
      if (first.length <= drop) {
        this.#chunks.shift();
        drop -= first.length;
      } else {
        this.#chunks[0] = first.subarray(drop);
        drop = 0;
      }
    }
  }

  /** A copy of the samples up to session-clock sample `until`, leaving the buffer as it is. */
  peek(until: number): Int16Array {
    const count = Math.max(0, Math.min(this.#length, until - this.#start));
    const out = new Int16Array(count);
    let at = 0;
    for (const chunk of this.#chunks) {
      if (at >= count) break;
      const part = chunk.subarray(0, count - at);
      out.set(part, at);
      at += part.length;
    }
    return out;
  }

  /** Takes the samples up to session-clock sample `until` (all of them by default), leaving the rest. */
  take(until = this.end): Int16Array {
    const out = this.peek(until);
    this.dropBefore(this.#start + out.length);
    return out;
  }

  /** Empties the buffer (the clock keeps running). */
  clear(): void {
    this.dropBefore(this.end);
  }
}
