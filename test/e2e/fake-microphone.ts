import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Browser, BrowserType, LaunchOptions } from '@playwright/test';
import { decodeWav } from '../../src/audio/decode-wav.ts';
import { encodeWav } from '../../src/audio/encode-wav.ts';
import { resample } from '../../src/audio/resample.ts';
import { speechBytes } from '../support/speech-fixture.ts';

/** The held-out clip the fake microphones say: "The pink duck swims on Sunday." */
export const MICROPHONE_CLIP = 'clip02.wav';
/** Seconds of silence before the clip (the call is still being set up) and after it (the VAD's end of speech). */
const SILENCE_BEFORE = 0.5;
const SILENCE_AFTER = 3;

/**
 * Chromium with a fake microphone that says {@link MICROPHONE_CLIP} once: the clip padded with silence, written to
 * `path` as 16-bit PCM at 48 kHz (Chromium's capture rate), played by `--use-file-for-fake-audio-capture` (`%noloop`).
 * The test's own launch options are kept; `args` adds to them.
 */
export function launchWithMicrophone(
  chromium: BrowserType,
  launchOptions: LaunchOptions,
  path: string,
  args: string[] = [],
): Promise<Browser> {
  const clip = decodeWav(speechBytes(MICROPHONE_CLIP));
  const speech = resample(clip.samples, clip.sampleRate, 48_000);
  const samples = new Float32Array(Math.round((SILENCE_BEFORE + SILENCE_AFTER) * 48_000) + speech.length);
  samples.set(speech, Math.round(SILENCE_BEFORE * 48_000));
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, encodeWav(samples, 48_000));
  return chromium.launch({
    ...launchOptions,
    args: [
      ...(launchOptions.args ?? []),
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
      `--use-file-for-fake-audio-capture=${path}%noloop`,
      ...args,
    ],
  });
}
