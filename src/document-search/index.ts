/** Hybrid search over document chunks (full text and vectors, fused), with OpenAI's attribute filters: the index behind Vector Stores and `file_search`. */
export {
  type AttributeFilter,
  type Attributes,
  type AttributeValue,
  type ComparisonFilter,
  type CompoundFilter,
  FILTER_LIMITS,
  filterSizeProblem,
  matchesFilter,
} from './attribute-filter.ts';
export { HybridIndex, type IndexedChunk, type SearchHit, type SearchOptions } from './hybrid-index.ts';
