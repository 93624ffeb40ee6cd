/** The audio formats of OpenAI's `POST /v1/audio/speech` (`response_format`), and the media type each is answered with. */

/** OpenAI's `response_format` values, its default (`mp3`) first. */
export const SPEECH_FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const;

export type SpeechFormat = (typeof SPEECH_FORMATS)[number];

/**
 * The `Content-Type` of each format's answer: what OpenAI sends for the same `response_format`, so that clients that
 * dispatch on it (or store it beside the bytes) see no difference.
 *
 * `opus` is an Ogg Opus stream (RFC 7845) under OpenAI's `audio/opus`, not the `audio/ogg` that RFC registers for
 * files: browsers sniff media from its bytes (`OggS`), and the AI SDK from the first bytes too, so the label only
 * decides what a download is named. An app that hands the bytes to a `<audio>` element through a Blob can give the
 * Blob `audio/ogg` itself. `pcm` is headerless 24 kHz 16-bit little-endian mono, which no player reads without being
 * told its shape; `audio/pcm` is what OpenAI answers.
 */
export const SPEECH_CONTENT_TYPES: Record<SpeechFormat, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/opus',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

/** Whether `value` is one of the formats, for a schema or a route that reads it from a request. */
export function isSpeechFormat(value: unknown): value is SpeechFormat {
  return typeof value === 'string' && (SPEECH_FORMATS as readonly string[]).includes(value);
}
