import type { SpeechFormat } from './speech-formats.ts';

/**
 * A format this realm cannot encode: its optional encoder package is not installed (or not handed to the engine
 * worker), or the platform lacks what it needs. The message says what to install and which formats work without it,
 * for a 400 that names `response_format`.
 */
export class UnsupportedFormatError extends Error {
  override readonly name = 'UnsupportedFormatError';

  constructor(
    readonly format: SpeechFormat,
    message: string,
    /** The optional package that would add the format, where one would. */
    readonly missingPackage?: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
