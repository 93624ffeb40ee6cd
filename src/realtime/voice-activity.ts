/**
 * Voice activity over audio time (never the wall clock, so the same audio always cuts the same way): the energy of
 * each 20 ms frame against a level set by the session's `threshold`. Speech starts after a few loud frames in a row
 * (a click is not a turn) and stops after `silence_duration_ms` of quiet frames.
 */
import { silenceForEagerness, type TurnDetection } from './session-config.ts';
import { SESSION_RATE } from './pcm-audio.ts';

const FRAME_MS = 20;
const FRAME = (SESSION_RATE * FRAME_MS) / 1000;
/** Loud frames in a row that make speech: 60 ms, shorter than any syllable, longer than a click or a pop. */
const START_FRAMES = 3;
/** The prefix padding semantic VAD keeps, as OpenAI's server VAD does by default. */
const SEMANTIC_PREFIX_MS = 300;

/**
 * The level (RMS in dBFS) a threshold in 0..1 stands for: 0 hears −60 dBFS (a quiet room's hiss), 0.5 −40 dBFS (a
 * voice at arm's length on a laptop microphone clears it), 1 −20 dBFS (only speech close to the microphone).
 */
export function thresholdLevel(threshold: number): number {
  return -60 + 40 * threshold;
}

/** A frame's RMS level in dBFS (−∞ for digital silence). */
export function frameLevel(samples: Int16Array, from: number, to: number): number {
  let sum = 0;
  for (let i = from; i < to; i++) {
    const s = samples[i]! / 0x8000;
    sum += s * s;
  }
  return 10 * Math.log10(sum / Math.max(1, to - from));
}

export interface VadSettings {
  level: number;
  prefixPaddingMs: number;
  silenceMs: number;
}

/**
 * A pause this long in speech is where the session starts transcribing ahead of the turn's end (a `pause` event):
 * when the silence goes on to end the turn, the transcript is ready sooner; when speech resumes, it is dropped.
 */
export const PAUSE_MS = 200;

/** The detector's settings for a session's `turn_detection` (semantic VAD: server VAD's detector, see session-config). */
export function vadSettings(turn: TurnDetection): VadSettings {
  if (turn.type === 'server_vad')
    return {
      level: thresholdLevel(turn.threshold),
      prefixPaddingMs: turn.prefix_padding_ms,
      silenceMs: turn.silence_duration_ms,
    };
  return {
    level: thresholdLevel(0.5),
    prefixPaddingMs: SEMANTIC_PREFIX_MS,
    silenceMs: silenceForEagerness(turn.eagerness),
  };
}

export type VadEvent =
  /** Speech began at `speechMs` (the first loud frame; the session subtracts the prefix padding). */
  | { type: 'start'; speechMs: number }
  /** Speech paused for {@link PAUSE_MS} (shorter than the silence that ends a turn): speech so far ends at `atSample`. */
  | { type: 'pause'; atSample: number }
  /** Speech went on after a `pause`. */
  | { type: 'resume' }
  /** Speech ended: `endMs` is where the silence that ended it ran out (OpenAI's `audio_end_ms` includes it). */
  | { type: 'stop'; endMs: number; lastSpeechMs: number };

/** The detector's state across appends; positions are in samples on the session's audio clock. */
export class VoiceActivity {
  #pending = new Int16Array(0);
  /** The session-clock sample at which `#pending` starts. */
  #at = 0;
  #speaking = false;
  #loudRun = 0;
  #quietRun = 0;
  #lastLoudEnd = 0;

  constructor(public settings: VadSettings) {}

  /** Whether a pause comes well before the turn's end (else transcribing ahead gains nothing). */
  get #pauses(): boolean {
    return this.settings.silenceMs >= PAUSE_MS + 2 * FRAME_MS;
  }

  get speaking(): boolean {
    return this.#speaking;
  }

  /** Forgets a turn in progress (the buffer was cleared or committed by hand). */
  reset(clockSample: number): void {
    this.#pending = new Int16Array(0);
    this.#at = clockSample;
    this.#speaking = false;
    this.#loudRun = 0;
    this.#quietRun = 0;
  }

  /** Audio appended at session-clock sample `clockSample` (the end of what came before); returns what it decided. */
  push(samples: Int16Array, clockSample: number): VadEvent[] {
    if (this.#pending.length === 0) this.#at = clockSample;
    const all = new Int16Array(this.#pending.length + samples.length);
    all.set(this.#pending);
    all.set(samples, this.#pending.length);
    const events: VadEvent[] = [];
    let offset = 0;
    for (; offset + FRAME <= all.length; offset += FRAME) {
      const frameStart = this.#at + offset;
      const loud = frameLevel(all, offset, offset + FRAME) >= this.settings.level;
      if (loud) {
        if (this.#speaking && this.#quietRun >= PAUSE_FRAMES && this.#pauses) events.push({ type: 'resume' });
        this.#loudRun++;
        this.#quietRun = 0;
        this.#lastLoudEnd = frameStart + FRAME;
        if (!this.#speaking && this.#loudRun >= START_FRAMES) {
          this.#speaking = true;
          const first = frameStart - (START_FRAMES - 1) * FRAME;
          events.push({ type: 'start', speechMs: toMs(first) });
        }
      } else {
        this.#loudRun = 0;
        this.#quietRun++;
        if (this.#speaking && this.#quietRun === PAUSE_FRAMES && this.#pauses)
          events.push({ type: 'pause', atSample: frameStart + FRAME });
        if (this.#speaking && this.#quietRun * FRAME_MS >= this.settings.silenceMs) {
          this.#speaking = false;
          events.push({ type: 'stop', endMs: toMs(frameStart + FRAME), lastSpeechMs: toMs(this.#lastLoudEnd) });
        }
      }
    }
    this.#pending = all.slice(offset);
    this.#at += offset;
    return events;
  }
}

const PAUSE_FRAMES = PAUSE_MS / FRAME_MS;
const toMs = (sample: number) => Math.round((sample * 1000) / SESSION_RATE);
