/** The Batch API's wire types, as openai-node's `OpenAI.Batches` holds them (the runner keeps its batches in them). */
export type {
  Batch,
  BatchEndpoint,
  BatchError,
  BatchOutputLine,
  BatchRequestCounts,
  BatchStatus,
} from '../../batches/index.ts';
