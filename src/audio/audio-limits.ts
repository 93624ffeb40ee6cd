/**
 * What audio Lantern decodes at all: its sample rate, its channels, its length and the samples a decoder would write,
 * each read from the file's headers or a walk of its frames before anything is decoded, resampled or allocated.
 * Issue 41: a 25 MB 8-bit WAV whose header said 800 Hz was decoded and resampled to 2.5 GB over 27 s before its
 * length (31,250 s) was checked, and every other key waited.
 */
import { AudioLimitError } from './audio-decode-error.ts';

/**
 * The lowest sample rate read: 8 kHz, telephone speech (G.711, AMR-NB, MPEG-2.5's lowest), the least any recorder
 * writes. Below it a file is not speech a model can hear (Whisper listens up to 8 kHz), and a header claiming less
 * (800 Hz) stretches a small file into hours.
 */
export const MIN_SAMPLE_RATE = 8_000;
/**
 * The highest sample rate read: 384 kHz, the most any recorder or converter offers (DXD's 352.8 kHz, 384 kHz). A claim
 * above it (4 GHz) is not audio, and resampling it to 16 kHz would take a filter millions of taps wide.
 */
export const MAX_SAMPLE_RATE = 384_000;
/**
 * The most channels read: 32, as many as Web Audio's AudioBuffer must hold, and more than multitrack field recorders
 * and third-order ambisonics (16) write. WAV's header allows 65,535, Opus' and Vorbis' 255.
 */
export const MAX_CHANNELS = 32;
/**
 * Samples a decoder may write for each second of the length limit, all channels counted at the file's own rate:
 * 96,000, the limit's length of 48 kHz stereo (an hour is 1.4 GB of float samples, which a browser tab holds while it
 * resamples them). A browser decodes every channel at the file's rate before it resamples and before Lantern downmixes,
 * so an hour at 384 kHz or in 32 channels would be 8 to 16 times that.
 */
export const DECODED_SAMPLES_PER_SECOND = 48_000 * 2;

/**
 * The most tracks or streams one file may declare, audio or not: 256, more than any recording or chained Ogg holds (a
 * film carries a few audio tracks; a radio capture chains one stream a song). Each is a record while the file is
 * walked, and a 25 MB file of empty ones would be a million.
 */
export const MAX_TRACKS = 256;

/** Refuses a file declaring more than MAX_TRACKS tracks or streams. */
export function checkTracks(format: string, count: number): void {
  if (count > MAX_TRACKS) {
    throw new AudioLimitError(
      `The ${format} file declares more than ${MAX_TRACKS} tracks, more than any recording has; send its audio alone.`,
    );
  }
}

/** What a file decodes to, from its headers and frames: the figures the limits are checked against. */
export interface AudioMeasure {
  /** The format as the answer names it: `WAV`, `MP3`, `Ogg Opus`, `FLAC`, `MP4 AAC`, `WebM Opus`... */
  format: string;
  /** The rate the decoder writes at, in Hz (for AAC, which may double it with SBR, the doubled rate). */
  sampleRate: number;
  /** The channels the decoder writes (for AAC, which may make mono stereo with PS, at least 2). */
  channels: number;
  /**
   * The length, in seconds: summed over the file's own frames or packets, each counted at what its codec decodes it to
   * (so a header's total, which a decoder does not obey, is never taken on trust). Exact for WAV, MP3, Opus, FLAC and
   * AAC; an upper bound for Vorbis (each packet counted at its long block).
   */
  seconds: number;
}

/**
 * Refuses a sample rate or channel count no real audio has, as soon as a header names it: before the length is
 * worked out, and before anything is allocated by it.
 */
export function checkShape(format: string, sampleRate: number, channels: number): void {
  if (!(sampleRate >= MIN_SAMPLE_RATE && sampleRate <= MAX_SAMPLE_RATE)) {
    throw new AudioLimitError(
      `The audio (${format}) says its sample rate is ${sampleRate} Hz; audio is read at ${MIN_SAMPLE_RATE} to ` +
        `${MAX_SAMPLE_RATE} Hz. Send it at a common rate, such as 16000 or 48000 Hz.`,
    );
  }
  if (!(Number.isInteger(channels) && channels >= 1 && channels <= MAX_CHANNELS)) {
    throw new AudioLimitError(
      `The audio (${format}) says it has ${channels} channels; audio is read with 1 to ${MAX_CHANNELS}. ` +
        'Send it as mono or stereo.',
    );
  }
}

/**
 * Refuses audio longer than `maxSeconds`, or that would decode to more samples than the limit's length of 48 kHz
 * stereo, saying how long it is and what to send instead.
 */
export function checkMeasure(measure: AudioMeasure, maxSeconds: number): void {
  const { format, sampleRate, channels, seconds } = measure;
  checkShape(format, sampleRate, channels);
  if (seconds > maxSeconds) {
    throw new AudioLimitError(
      `The audio (${format}) is ${seconds.toFixed(1)} s long; the limit is ${maxSeconds} s. Split it and send the ` +
        'parts.',
    );
  }
  const decoded = seconds * sampleRate * channels;
  const allowed = maxSeconds * DECODED_SAMPLES_PER_SECOND;
  if (decoded > allowed) {
    throw new AudioLimitError(
      `The audio (${format}) decodes to ${Math.ceil(decoded)} samples (${seconds.toFixed(1)} s at ${sampleRate} Hz ` +
        `in ${channels} channels); the limit is ${allowed}, ${maxSeconds} s of 48 kHz stereo. Send it at a lower ` +
        'rate or with fewer channels (16 kHz mono is all speech recognition uses).',
    );
  }
}
