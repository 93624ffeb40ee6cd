/** The Vector Stores API's wire types, as openai-node's `OpenAI.VectorStores` holds them. */
export type {
  ChunkingStrategy,
  FileCounts,
  SearchResult,
  SearchResultsPage,
  VectorStore,
  VectorStoreDeleted,
  VectorStoreFile,
  VectorStoreFileBatch,
  VectorStoreFileDeleted,
} from '../../file-search/index.ts';
