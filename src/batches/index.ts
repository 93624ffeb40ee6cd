/** The Batch API: JSONL files of requests run in the background through the API, durably, with output and error files. */
export {
  BatchRunner,
  type BatchDispatch,
  type BatchListParams,
  type BatchRunnerOptions,
  type CreateBatchParams,
} from './batch-runner.ts';
export { readBatchInput, type BatchRequest } from './batch-input.ts';
export { DEFAULT_BATCH_LIMITS, type BatchLimits } from './batch-limits.ts';
export { BATCH_ENDPOINTS } from './records.ts';
export type * from './records.ts';
