/**
 * The one error the audio helpers throw for input they cannot read: what is wrong with it, and what to send instead.
 * The API layer turns it into a 400 on `file`; it is its own class so that this folder stays a leaf.
 */
export class AudioDecodeError extends Error {
  override readonly name = 'AudioDecodeError';
  /** The request field the error is about: always the uploaded audio. */
  readonly param = 'file';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
