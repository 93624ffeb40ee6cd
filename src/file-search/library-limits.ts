/**
 * Every limit of the Files and Vector Stores APIs, per API key. A request over any of them is refused before anything
 * is stored or indexed: 413 for a file or a key's storage over its bytes, 400 naming the parameter for the rest.
 *
 * OpenAI allows files of 512 MB and terabytes per project; a device holds far less, and the origin's quota (shared
 * with the models) binds first. These defaults hold a person's documents (thousands of pages) and keep one key from
 * filling the origin's storage on its own.
 */
export interface LibraryLimits {
  /** Largest file, in bytes. A 300-page PDF is a few megabytes; 32 MiB is also the request body's limit. */
  maxFileBytes: number;
  /** Most bytes of files one key keeps, counted before each upload is stored. */
  maxStorageBytes: number;
  /** Most files one key keeps. */
  maxFiles: number;
  /** Most vector stores one key keeps. */
  maxVectorStores: number;
  /**
   * Most chunks in one vector store. Each is embedded on the device (tens of milliseconds on a CPU) and searched by
   * brute force; 20,000 chunks of 800 tokens are about 16 million tokens, or 30,000 pages.
   */
  maxChunksPerStore: number;
  /** Most files in one `file_ids` list or file batch: 500, as the OpenAI API. */
  maxFilesPerBatch: number;
  /**
   * Most bytes one key's uploads may hold while they arrive together, counted as their bodies are read: 64 MiB, two of
   * the largest files. An upload that would pass it is refused (429) there, read no further; a key's upload alone never
   * is (issue 63: twenty uploads of 30 MiB at once took 2.2 GB).
   */
  maxUploadBytesInFlight: number;
}

export const DEFAULT_LIBRARY_LIMITS: Readonly<LibraryLimits> = Object.freeze({
  maxFileBytes: 32 * 1024 * 1024,
  maxStorageBytes: 512 * 1024 * 1024,
  maxFiles: 10_000,
  maxVectorStores: 1_000,
  maxChunksPerStore: 20_000,
  maxFilesPerBatch: 500,
  maxUploadBytesInFlight: 64 * 1024 * 1024,
});
