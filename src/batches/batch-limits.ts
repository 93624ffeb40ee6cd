/**
 * The Batch API's limits, per API key. An input file over them fails its batch (`failed`, with `errors` naming the
 * limit), as OpenAI's does; a create over `maxActiveBatches` is refused with 429.
 *
 * OpenAI takes 50,000 requests and 200 MB per batch; a device runs them one small model's turn at a time, so the
 * bound that matters is the file's size (a key's files are 32 MiB at most), and how many batches wait at once.
 */
export interface BatchLimits {
  /** Most requests (lines) in one input file: 50,000, as the OpenAI API. */
  maxRequests: number;
  /** Largest input file, in bytes: its lines are read into memory whole while the batch runs. */
  maxInputBytes: number;
  /** Most batches a key may have unfinished (validating, in progress, finalizing or cancelling) at once. */
  maxActiveBatches: number;
  /** Most problems of an input file listed in a failed batch's `errors` (every one is counted in the message). */
  maxReportedErrors: number;
}

export const DEFAULT_BATCH_LIMITS: Readonly<BatchLimits> = Object.freeze({
  maxRequests: 50_000,
  maxInputBytes: 32 * 1024 * 1024,
  maxActiveBatches: 16,
  maxReportedErrors: 100,
});
