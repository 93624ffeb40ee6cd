/** Files and vector stores of every key: kept, indexed on the device, searched (the Files and Vector Stores APIs). */
export {
  FileLibrary,
  type FileLibraryOptions,
  type IndexingProgress,
  type LibrarySearch,
  type TextExtractor,
} from './file-library.ts';
export { DEFAULT_LIBRARY_LIMITS, type LibraryLimits } from './library-limits.ts';
export { LibraryError } from './library-error.ts';
export type * from './records.ts';
