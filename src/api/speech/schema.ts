import * as z from 'zod';
import { SPEECH_FORMATS, type SpeechFormat } from '../../audio/index.ts';
import type { Limits } from '../options.ts';
import { optional, parse } from '../request-validation.ts';

/** How a speech answer is sent: the audio's bytes as they are made (chunked), or server-sent events of base64 audio. */
export const STREAM_FORMATS = ['audio', 'sse'] as const;

export interface SpeechParams {
  model: string;
  input: string;
  voice: string;
  instructions?: string;
  responseFormat: SpeechFormat;
  speed: number;
  streamFormat: (typeof STREAM_FORMATS)[number];
}

/** The speech body (`POST /v1/audio/speech`) as a zod schema, with OpenAI's bounds; other fields are ignored. */
function speechSchema(limits: Limits) {
  return z.object({
    model: z.string().min(1),
    input: z
      .string()
      .max(limits.maxSpeechChars)
      .refine((text) => text.trim().length > 0, '`input` is empty: give the text to say.'),
    voice: z
      .string({
        error: (issue) =>
          typeof issue.input === 'object' && issue.input !== null && 'id' in issue.input
            ? 'Custom voices (`{"id": …}`) are not supported: name one of the built-in voices (`alloy`, …) or one of ' +
              "the model's own."
            : undefined,
      })
      .min(1),
    instructions: optional(z.string().max(limits.maxSpeechChars)),
    response_format: optional(z.enum(SPEECH_FORMATS)),
    speed: optional(z.number().min(0.25).max(4)),
    stream_format: optional(z.enum(STREAM_FORMATS)),
  });
}

/** Compiled once per handler, as the limits are fixed for its lifetime. */
export function speechParser(limits: Limits): (body: unknown) => SpeechParams {
  const schema = speechSchema(limits);
  return (body) => {
    const p = parse(schema, body);
    return {
      model: p.model,
      input: p.input,
      voice: p.voice,
      ...(p.instructions != null && { instructions: p.instructions }),
      // mp3 is OpenAI's default.
      responseFormat: p.response_format ?? 'mp3',
      speed: p.speed ?? 1,
      streamFormat: p.stream_format ?? 'audio',
    };
  };
}
