import { AudioDecodeError, audioRefusal, measureAudio } from '../../audio/index.ts';
import type { AudioFile } from '../../engine-interface/index.ts';
import { readForm, formText } from '../multipart.ts';
import { invalidRequest } from '../errors.ts';
import type { Limits } from '../options.ts';

/** The formats of a transcript's answer (`diarized_json` needs speakers, which no model here tells apart). */
export const RESPONSE_FORMATS = ['json', 'text', 'srt', 'verbose_json', 'vtt'] as const;
export type TranscriptFormat = (typeof RESPONSE_FORMATS)[number];

export interface AudioParams {
  model: string;
  file: AudioFile;
  language?: string;
  prompt?: string;
  responseFormat: TranscriptFormat;
  temperature: number;
  /** `segment` when none was asked for. */
  granularities: ReadonlySet<'segment' | 'word'>;
  stream: boolean;
}

/**
 * Fields of OpenAI's transcription request that only its diarizing or token-billed models take: refused by name, so an
 * app learns at once that they do nothing here.
 */
const UNSUPPORTED: Record<string, string> = {
  'include[]':
    '`include` (log probabilities of the transcript) is not supported: the models here report `avg_logprob` per ' +
    'segment in `verbose_json`.',
  'known_speaker_names[]': 'Speaker identification (`known_speaker_names`) is not supported: no model here diarizes.',
  'known_speaker_references[]':
    'Speaker identification (`known_speaker_references`) is not supported: no model here diarizes.',
};

/**
 * Reads and checks a `multipart/form-data` body of `POST /v1/audio/transcriptions` (`translate: false`) or
 * `/v1/audio/translations`, as the openai SDKs send it: text fields as strings, arrays as repeated `name[]` fields,
 * objects as `name[key]`. The body, read whole before (`rateLimit`), is bounded by {@link audioBodyBytes}; the file by
 * `maxAudioBytes` itself.
 */
export async function readAudioRequest(
  request: Request,
  bytes: Uint8Array,
  limits: Limits,
  translate: boolean,
): Promise<AudioParams> {
  const form = await readForm(request, bytes, 'The audio endpoints');

  for (const [name, message] of Object.entries(UNSUPPORTED)) {
    if (form.has(name) || form.has(name.slice(0, -2))) throw invalidRequest(message, name.slice(0, -2));
  }
  const text = (name: string) => formText(form, name);

  const model = text('model');
  if (!model) throw invalidRequest("Missing required parameter: 'model'.", 'model');

  const file = form.get('file');
  if (file === null) throw invalidRequest("Missing required parameter: 'file'.", 'file');
  if (typeof file === 'string') {
    throw invalidRequest("'file' must be an audio file (a form field with a file name), not text.", 'file');
  }
  if (file.size > limits.maxAudioBytes) {
    throw invalidRequest(
      `The audio file is ${file.size} bytes; the limit is ${limits.maxAudioBytes} bytes (25 MB). Split the audio, or ` +
        'send it compressed (mp3, ogg, webm, m4a).',
      'file',
      'file_too_large',
    );
  }

  const language = text('language')?.trim().toLowerCase() || undefined;
  if (language !== undefined && !/^[a-z]{2,3}$/.test(language)) {
    throw invalidRequest(
      `Invalid language \`${language}\`: give the spoken language as an ISO-639-1 code, such as \`en\`.`,
      'language',
    );
  }
  if (translate && language !== undefined) {
    throw invalidRequest('`language` is not a parameter of translations: the output is always English.', 'language');
  }

  const prompt = text('prompt') || undefined;
  if (prompt !== undefined && prompt.length > limits.maxInputChars) {
    throw invalidRequest(`'prompt' is longer than the limit of ${limits.maxInputChars} characters.`, 'prompt');
  }

  const format = text('response_format') ?? 'json';
  if (!(RESPONSE_FORMATS as readonly string[]).includes(format)) {
    throw invalidRequest(
      format === 'diarized_json'
        ? '`diarized_json` is not supported: no model here tells speakers apart. Use json, text, srt, verbose_json or vtt.'
        : `Invalid value for 'response_format': expected one of ${RESPONSE_FORMATS.join(', ')}, but got \`${format}\`.`,
      'response_format',
    );
  }
  const responseFormat = format as TranscriptFormat;

  const temperatureText = text('temperature');
  const temperature = temperatureText === undefined || temperatureText === '' ? 0 : Number(temperatureText);
  if (!Number.isFinite(temperature) || temperature < 0 || temperature > 1) {
    throw invalidRequest(
      `Invalid 'temperature': expected a number from 0 to 1, but got \`${temperatureText}\`.`,
      'temperature',
    );
  }

  const granularities = new Set<'segment' | 'word'>();
  for (const value of [...form.getAll('timestamp_granularities[]'), ...form.getAll('timestamp_granularities')]) {
    if (value !== 'segment' && value !== 'word') {
      throw invalidRequest(
        `Invalid value for 'timestamp_granularities': expected \`segment\` or \`word\`, but got \`${String(value)}\`.`,
        'timestamp_granularities',
      );
    }
    granularities.add(value);
  }
  if (granularities.size > 0 && responseFormat !== 'verbose_json') {
    throw invalidRequest(
      "`timestamp_granularities` needs `response_format: 'verbose_json'`: the other formats carry no timestamps " +
        '(srt and vtt time each segment).',
      'timestamp_granularities',
    );
  }
  if (granularities.size === 0) granularities.add('segment');

  const streamText = text('stream');
  if (streamText !== undefined && streamText !== 'true' && streamText !== 'false') {
    throw invalidRequest(`Invalid 'stream': expected true or false, but got \`${streamText}\`.`, 'stream');
  }
  const stream = streamText === 'true';
  if (stream && translate) throw invalidRequest('Translations are not streamed: leave out `stream`.', 'stream');
  if (stream && responseFormat !== 'json' && responseFormat !== 'text') {
    throw invalidRequest(
      `A streamed transcript is text events: ask for \`response_format\` json or text, not ${responseFormat}, or leave ` +
        'out `stream`.',
      'stream',
    );
  }

  const chunking = text('chunking_strategy') ?? text('chunking_strategy[type]');
  if (chunking !== undefined && chunking !== 'auto' && chunking !== 'server_vad') {
    throw invalidRequest(
      `Invalid 'chunking_strategy': expected \`auto\` or a \`server_vad\` object, but got \`${chunking}\`.`,
      'chunking_strategy',
    );
  }

  const audio = new Uint8Array(await file.arrayBuffer());
  checkAudio(audio, file.name ? `\`${file.name}\`` : 'The file', limits.maxAudioSeconds);

  return {
    model,
    file: { bytes: audio, name: file.name ?? '', type: file.type },
    ...(language !== undefined && { language }),
    ...(prompt !== undefined && { prompt }),
    responseFormat,
    temperature,
    granularities,
    stream,
  };
}

/**
 * Refuses, naming `file`, audio whose headers and frames say it is longer than `maxSeconds`, or at a rate or channel
 * count no audio has: before the request reaches an engine's queue, and before a sample is decoded (issue 41: a WAV
 * header saying 800 Hz made 25 MB of samples 2.5 GB and 27 s of the engine's time). A format not measured here goes on:
 * the engine that decodes it decides.
 */
function checkAudio(audio: Uint8Array, named: string, maxSeconds: number): void {
  try {
    measureAudio(audio, maxSeconds);
  } catch (error) {
    if (error instanceof AudioDecodeError) throw invalidRequest(audioRefusal(error, named), 'file');
    throw error;
  }
}

/** Room for the fields beside the file (model, prompt, ...) and the multipart framing, in bytes. */
const FIELDS_ROOM = 256 * 1024;

/** The largest body of an audio request: the file's limit, and room for the other fields. */
export const audioBodyBytes = (limits: Pick<Limits, 'maxAudioBytes'>) => limits.maxAudioBytes + FIELDS_ROOM;
