/**
 * What bench/file-search.ts measures the same way in Node and in the browser (the bench page): a vector store's
 * chunks read back from the document storage the library wrote them to (a directory in Node, the origin's IndexedDB in
 * Chromium), as the library's own index takes them, and what they hold; and a store made of files through the openai
 * SDK, timed from the first upload to the last file indexed.
 */
import type OpenAI from 'openai';
import type { IndexedChunk } from '../../src/document-search/index.ts';
import type { DocumentStorage } from '../../src/document-store/index.ts';

/** A file the bench uploads: its text (a PDF's too: the bench writes PDFs in ASCII), its name and media type. */
export interface BenchFile {
  name: string;
  type: string;
  text: string;
}

/** `static` chunking (OpenAI's `chunking_strategy`), or none for `auto` (800 tokens, 400 overlapping). */
export type BenchChunking = { maxChunkTokens: number; overlapTokens: number } | null;

/** A store made of files: its id, its files' ids in the order given, and the times of the two steps. */
export interface IndexedStore {
  storeId: string;
  fileIds: string[];
  /** ms from the first upload to the last file stored (`POST /v1/files`, one after another). */
  uploadMs: number;
  /** ms from the first upload to the store `completed`, its last file polled every {@link POLL_MS} ms. */
  ms: number;
  /** Files that did not come out `completed`. */
  failed: number;
}

/** How often the bench asks whether a store is indexed: the resolution of the indexing times. */
export const POLL_MS = 25;

/**
 * Uploads `files` one after another, makes a vector store of them (with `chunking`), and waits until the store is
 * `completed`: the whole path an app takes, from its first upload to a store it can search.
 */
export async function indexFiles(
  client: OpenAI,
  files: readonly BenchFile[],
  chunking: BenchChunking,
  toUpload: (file: BenchFile) => Promise<File | Blob> | File | Blob,
): Promise<IndexedStore> {
  const started = performance.now();
  const fileIds: string[] = [];
  for (const file of files) {
    const uploaded = await client.files.create({ file: (await toUpload(file)) as File, purpose: 'assistants' });
    fileIds.push(uploaded.id);
  }
  const uploadMs = performance.now() - started;
  const store = await client.vectorStores.create({
    name: 'bench',
    file_ids: fileIds,
    ...(chunking && {
      chunking_strategy: {
        type: 'static',
        static: { max_chunk_size_tokens: chunking.maxChunkTokens, chunk_overlap_tokens: chunking.overlapTokens },
      },
    }),
  });
  // The library indexes a store's files one at a time, in the order given: the last one's status says when the store
  // is done, and reading it costs one record, where the store's own status reads every file's (a poll of a store of
  // hundreds of files would load the machine it measures).
  const last = fileIds.at(-1)!;
  for (;;) {
    const file = await client.vectorStores.files.retrieve(last, { vector_store_id: store.id });
    if (file.status !== 'in_progress') {
      const current = await client.vectorStores.retrieve(store.id);
      if (current.status !== 'in_progress') {
        return {
          storeId: store.id,
          fileIds,
          uploadMs,
          ms: performance.now() - started,
          failed: current.file_counts.total - current.file_counts.completed,
        };
      }
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** Each query searched in turn through `POST /v1/vector_stores/{id}/search`: ms, and the files of the hits, best first. */
export async function searchStore(
  client: OpenAI,
  storeId: string,
  queries: readonly string[],
  maxResults: number,
): Promise<{ ms: number; fileIds: string[] }[]> {
  const found = [];
  for (const query of queries) {
    const started = performance.now();
    const page = await client.vectorStores.search(storeId, { query, max_num_results: maxResults });
    found.push({ ms: performance.now() - started, fileIds: page.data.map((hit) => hit.file_id) });
  }
  return found;
}

/** The library's records, as far as the bench reads them (src/file-search/file-library.ts keeps them so). */
interface StoreFileRow {
  file: { id: string; vector_store_id: string; status: string; attributes: IndexedChunk['attributes'] | null };
  owner: string;
}
interface FileRow {
  file: { id: string; filename: string };
}
interface ChunkRun {
  texts: string[];
  vectors: Float32Array[][];
}

/**
 * A store's chunks as the library's index takes them (its `toIndexed`: ids `fileId#n`, the file's name and
 * attributes, every window's vector), read from `storage`; and the full-text snapshot stored beside them, if one is.
 */
export async function storedChunks(
  storage: DocumentStorage,
  storeId: string,
): Promise<{ chunks: IndexedChunk[]; snapshot: string | undefined }> {
  const files = (await storage.list<StoreFileRow>('vector_store_files', [])).filter(
    (row) => row.file.vector_store_id === storeId && row.file.status === 'completed',
  );
  const chunks: IndexedChunk[] = [];
  for (const row of files) {
    const fileId = row.file.id;
    const filename = (await storage.get<FileRow>('files', [row.owner, fileId]))?.file.filename ?? fileId;
    const first = chunks.length;
    for (const run of await storage.list<ChunkRun>('chunks', [row.owner, storeId, fileId])) {
      run.texts.forEach((text, i) =>
        chunks.push({
          id: `${fileId}#${chunks.length - first}`,
          fileId,
          filename,
          text,
          attributes: row.file.attributes ?? {},
          vectors: run.vectors[i] ?? [],
        }),
      );
    }
  }
  const owner = files[0]?.owner;
  const saved = owner ? await storage.get<{ snapshot: string }>('indexes', [owner, storeId]) : undefined;
  return { chunks, snapshot: saved?.snapshot };
}

/** What a store's chunk records hold: chunks, embedded windows, the text's UTF-8 bytes and the vectors' bytes. */
export interface ChunkRecords {
  chunks: number;
  windows: number;
  dimensions: number;
  textBytes: number;
  vectorBytes: number;
  /** The full-text snapshot stored beside the chunks (UTF-8 bytes), or null where none is stored yet. */
  snapshotBytes: number | null;
}

export async function chunkRecords(storage: DocumentStorage, storeId: string): Promise<ChunkRecords> {
  const { chunks, snapshot } = await storedChunks(storage, storeId);
  const encoder = new TextEncoder();
  const vectors = chunks.flatMap((chunk) => chunk.vectors);
  return {
    chunks: chunks.length,
    windows: vectors.length,
    dimensions: vectors[0]?.length ?? 0,
    textBytes: chunks.reduce((n, chunk) => n + encoder.encode(chunk.text).length, 0),
    vectorBytes: vectors.reduce((n, vector) => n + vector.byteLength, 0),
    snapshotBytes: snapshot === undefined ? null : encoder.encode(snapshot).length,
  };
}
