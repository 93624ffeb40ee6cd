/** Why a file cannot be made searchable: the API answers 400, or fails the vector store file, with the message. */

/**
 * Thrown for a file whose type cannot be read as text: its message says which types can (the API answers 400 with it).
 */
export class UnsupportedFileError extends Error {
  override readonly name = 'UnsupportedFileError';
}

/**
 * Thrown for a file of a supported type that is broken (an unreadable PDF, invalid UTF-8, JSON that does not parse),
 * empty, or past one of the limits of `extraction-budget.ts`.
 */
export class UnreadableFileError extends Error {
  override readonly name = 'UnreadableFileError';
}
