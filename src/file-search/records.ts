/**
 * The objects of the Files and Vector Stores APIs, exactly as they go on the wire (openai-node's `FileObject`,
 * `VectorStore`, `VectorStoreFile`, `VectorStoreFileBatch`, `VectorStoreSearchResponse`): the library keeps them in
 * this shape, beside its own fields, so that every answer is a record as kept, and `src/api` re-exports them as its
 * wire types.
 */
import type { Attributes } from '../document-search/index.ts';

export type { Attributes };

/**
 * `batch`: a Batch API input (JSONL); `batch_output`: a batch's output or error file, which only the Batch API writes.
 * Neither is indexed for search: a vector store refuses them.
 */
export type FilePurpose = 'assistants' | 'user_data' | 'batch' | 'batch_output';

export interface FileObject {
  id: string;
  object: 'file';
  bytes: number;
  created_at: number;
  filename: string;
  purpose: FilePurpose;
  /** Deprecated by OpenAI, still sent: `processed` once stored. */
  status: 'uploaded' | 'processed' | 'error';
  expires_at?: number | null;
}

export interface FileDeleted {
  id: string;
  object: 'file';
  deleted: boolean;
}

export interface StaticChunking {
  max_chunk_size_tokens: number;
  chunk_overlap_tokens: number;
}

/** As reported: `auto` is reported as the `static` sizes it stands for, as OpenAI does. */
export type ChunkingStrategy = { type: 'static'; static: StaticChunking };

export interface FileCounts {
  in_progress: number;
  completed: number;
  failed: number;
  cancelled: number;
  total: number;
}

export interface ExpiresAfter {
  anchor: 'last_active_at';
  days: number;
}

export type Metadata = Record<string, string>;

export interface VectorStore {
  id: string;
  object: 'vector_store';
  created_at: number;
  name: string;
  description?: string | null;
  usage_bytes: number;
  file_counts: FileCounts;
  status: 'expired' | 'in_progress' | 'completed';
  expires_after?: ExpiresAfter;
  expires_at: number | null;
  last_active_at: number | null;
  metadata: Metadata | null;
}

export interface VectorStoreDeleted {
  id: string;
  object: 'vector_store.deleted';
  deleted: boolean;
}

export type VectorStoreFileStatus = 'in_progress' | 'completed' | 'cancelled' | 'failed';

export interface LastError {
  code: 'server_error' | 'unsupported_file' | 'invalid_file';
  message: string;
}

export interface VectorStoreFile {
  id: string;
  object: 'vector_store.file';
  created_at: number;
  usage_bytes: number;
  vector_store_id: string;
  status: VectorStoreFileStatus;
  last_error: LastError | null;
  chunking_strategy: ChunkingStrategy;
  attributes: Attributes | null;
}

export interface VectorStoreFileDeleted {
  id: string;
  object: 'vector_store.file.deleted';
  deleted: boolean;
}

export interface VectorStoreFileBatch {
  id: string;
  object: 'vector_store.files_batch';
  created_at: number;
  vector_store_id: string;
  status: VectorStoreFileStatus;
  file_counts: FileCounts;
}

export interface SearchResult {
  file_id: string;
  filename: string;
  score: number;
  attributes: Attributes | null;
  content: { type: 'text'; text: string }[];
}

/** The answer of `POST /v1/vector_stores/{id}/search`: a page of results, never more than one. */
export interface SearchResultsPage {
  object: 'vector_store.search_results.page';
  search_query: string[];
  data: SearchResult[];
  has_more: false;
  next_page: null;
}

/** A cursor page of a list (`GET /v1/files`, `/v1/vector_stores`, ...). */
export interface ListPage<T> {
  object: 'list';
  data: T[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}
