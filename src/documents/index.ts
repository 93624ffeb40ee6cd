/** Files made searchable: an uploaded file's text, and that text cut into the chunks a vector store embeds. */
export {
  extractText,
  SUPPORTED_EXTENSIONS,
  UnreadableFileError,
  UnsupportedFileError,
  type ExtractedText,
  type ExtractionOptions,
} from './extract-text.ts';
export { CHUNKING_BOUNDS, chunkText, DEFAULT_CHUNKING, type ChunkingOptions, type TextChunk } from './chunk-text.ts';
export { countTokens } from './count-tokens.ts';
export { DEFAULT_EXTRACTION_TIME_LIMIT_MS } from './extraction-budget.ts';
