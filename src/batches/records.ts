/**
 * The Batch API's objects exactly as they go on the wire (openai-node's `OpenAI.Batches`: `Batch`, `BatchError`,
 * `BatchRequestCounts`), and the lines of its output and error files: the runner keeps each batch in this shape, beside
 * its own fields, and `src/api` re-exports them as its wire types.
 */
import type { Metadata } from '../file-search/index.ts';

/** The routes a batch's lines may call. */
export type BatchEndpoint = '/v1/chat/completions' | '/v1/responses' | '/v1/embeddings';

export const BATCH_ENDPOINTS: readonly BatchEndpoint[] = ['/v1/chat/completions', '/v1/responses', '/v1/embeddings'];

export type BatchStatus =
  'validating' | 'failed' | 'in_progress' | 'finalizing' | 'completed' | 'expired' | 'cancelling' | 'cancelled';

/** One problem of an input file (its `line`, from 1), or of the batch as a whole (`line: null`). */
export interface BatchError {
  code: string;
  line: number | null;
  message: string;
  param: string | null;
}

export interface BatchRequestCounts {
  total: number;
  completed: number;
  failed: number;
}

export interface Batch {
  id: string;
  object: 'batch';
  endpoint: BatchEndpoint;
  /** The model the lines name (every line names the same one), once the input file has been read. */
  model?: string;
  errors: { object: 'list'; data: BatchError[] } | null;
  input_file_id: string;
  completion_window: '24h';
  status: BatchStatus;
  output_file_id: string | null;
  error_file_id: string | null;
  created_at: number;
  in_progress_at: number | null;
  expires_at: number;
  finalizing_at: number | null;
  completed_at: number | null;
  failed_at: number | null;
  expired_at: number | null;
  cancelling_at: number | null;
  cancelled_at: number | null;
  request_counts: BatchRequestCounts;
  metadata: Metadata | null;
}

/**
 * One line of an output file (a request answered 2xx) or of an error file (answered with an error status: `response`
 * holds the error body, as OpenAI's; or not run at all, the batch having expired: `response: null` and `error`).
 */
export interface BatchOutputLine {
  id: string;
  custom_id: string;
  response: { status_code: number; request_id: string; body: unknown } | null;
  error: { code: string; message: string } | null;
}
