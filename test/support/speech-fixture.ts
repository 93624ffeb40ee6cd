import { readFileSync } from 'node:fs';

/** The bundled tiny-whisper's held-out speech (test/fixtures/speech, written by scripts/fixtures/speech_fixture.py). */
export interface SpeechClip {
  file: string;
  text: string;
  voice?: string;
  speed?: number;
  note?: string;
}

export const SPEECH_DIR = 'test/fixtures/speech/';
export const speechClips: SpeechClip[] = JSON.parse(readFileSync(`${SPEECH_DIR}manifest.json`, 'utf8'));
export const speechClip = (file: string): SpeechClip => speechClips.find((c) => c.file === file)!;
export const speechBytes = (file: string): Buffer => readFileSync(`${SPEECH_DIR}${file}`);
