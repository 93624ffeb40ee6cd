/**
 * The one error the audio helpers throw for input they cannot read: what is wrong with it, and what to send instead.
 * The API layer turns it into a 400 on `file`; it is its own class so that this folder stays a leaf.
 */
export class AudioDecodeError extends Error {
  override readonly name: string = 'AudioDecodeError';
  /** The request field the error is about: always the uploaded audio. */
  readonly param = 'file';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * Audio that is read well enough to know it is past a limit (its length, rate, channels, decoded size, tracks): its
 * message says so on its own, where an unreadable file's says why it could not be decoded.
 */
export class AudioLimitError extends AudioDecodeError {
  override readonly name: string = 'AudioLimitError';
}

/**
 * The answer to a refused file, the same wherever it is refused (the API, the engine, the page): a limit's message as
 * it is, an unreadable file's after "`name` could not be decoded as audio".
 *
 * @example
 * throw invalidRequest(audioRefusal(error, `\`${file.name}\``), 'file');
 */
export function audioRefusal(error: AudioDecodeError, named: string): string {
  return error instanceof AudioLimitError ? error.message : `${named} could not be decoded as audio: ${error.message}`;
}
