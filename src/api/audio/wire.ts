/**
 * The transcription wire formats (`POST /v1/audio/transcriptions` and `/translations`), as openai-node's
 * `Transcription`, `TranscriptionVerbose`, `TranscriptionSegment`, `TranscriptionWord` and stream events have them, and
 * the subtitle formats (SubRip, WebVTT) written from the same segments.
 */
import type { TranscribeResult } from '../../engine-interface/index.ts';
import { languageName } from './languages.ts';

/** `response_format: "json"`, as whisper-1 answers it: the text, and the audio's length as billed (whole seconds). */
export interface Transcription {
  text: string;
  usage: { type: 'duration'; seconds: number };
}

export interface TranscriptionSegment {
  id: number;
  /** Where the window the segment was decoded in starts, in spectrogram frames (10 ms each), as Whisper reports it. */
  seek: number;
  start: number;
  end: number;
  text: string;
  tokens: number[];
  temperature: number;
  avg_logprob: number;
  compression_ratio: number;
  no_speech_prob: number;
}

export interface TranscriptionWord {
  word: string;
  start: number;
  end: number;
}

/** `response_format: "verbose_json"`. */
export interface TranscriptionVerbose {
  task: 'transcribe' | 'translate';
  /** The spoken language's English name (`english`), as OpenAI writes it. */
  language: string;
  duration: number;
  text: string;
  segments?: TranscriptionSegment[];
  words?: TranscriptionWord[];
  usage: { type: 'duration'; seconds: number };
}

export interface TranscriptionTextDeltaEvent {
  type: 'transcript.text.delta';
  delta: string;
}

export interface TranscriptionTextDoneEvent {
  type: 'transcript.text.done';
  text: string;
}

const billedSeconds = (result: TranscribeResult) => Math.ceil(result.duration);

export function jsonTranscript(result: TranscribeResult): Transcription {
  return { text: result.text, usage: { type: 'duration', seconds: billedSeconds(result) } };
}

export function verboseTranscript(
  result: TranscribeResult,
  task: 'transcribe' | 'translate',
  granularities: ReadonlySet<'segment' | 'word'>,
): TranscriptionVerbose {
  return {
    task,
    language: languageName(result.language),
    duration: round3(result.duration),
    text: result.text,
    ...(granularities.has('segment') && {
      segments: result.segments.map((s, id) => ({
        id,
        seek: Math.floor(s.windowStart * 100),
        start: s.start,
        end: s.end,
        text: s.text,
        tokens: s.tokens,
        temperature: s.temperature,
        avg_logprob: s.avgLogprob,
        compression_ratio: s.compressionRatio,
        no_speech_prob: s.noSpeechProb,
      })),
    }),
    ...(granularities.has('word') && { words: result.words ?? [] }),
    usage: { type: 'duration', seconds: billedSeconds(result) },
  };
}

/** SubRip: numbered cues from 1, `HH:MM:SS,mmm --> HH:MM:SS,mmm`, a blank line after each. */
export function srtTranscript(result: TranscribeResult): string {
  return result.segments
    .map((s, i) => `${i + 1}\n${clock(s.start, ',')} --> ${clock(s.end, ',')}\n${s.text.trim()}\n\n`)
    .join('');
}

/** WebVTT: the `WEBVTT` header, then cues `HH:MM:SS.mmm --> HH:MM:SS.mmm`, a blank line after each. */
export function vttTranscript(result: TranscribeResult): string {
  return `WEBVTT\n\n${result.segments
    .map((s) => `${clock(s.start, '.')} --> ${clock(s.end, '.')}\n${s.text.trim()}\n\n`)
    .join('')}`;
}

function clock(seconds: number, decimal: ',' | '.'): string {
  const ms = Math.max(0, Math.round(seconds * 1000));
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = Math.floor((ms % 60_000) / 1000);
  return `${pad(h)}:${pad(m)}:${pad(s)}${decimal}${pad(ms % 1000, 3)}`;
}

const round3 = (n: number) => Math.round(n * 1000) / 1000;
