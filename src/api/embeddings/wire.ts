/** The embeddings wire format (`POST /v1/embeddings`), as openai-node's `CreateEmbeddingResponse` has it. */

export interface Embedding {
  object: 'embedding';
  index: number;
  /** Numbers with `encoding_format: "float"`; little-endian float32 in standard base64 with `"base64"`. */
  embedding: number[] | string;
}

export interface EmbeddingList {
  object: 'list';
  data: Embedding[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}
