import { EngineError, type Engine, type EngineErrorKind } from '../engine-interface/index.ts';
import type { DocumentStorage } from '../document-store/index.ts';
import {
  HybridIndex,
  type AttributeFilter,
  type Attributes,
  type IndexedChunk,
  type SearchOptions,
} from '../document-search/index.ts';
import {
  chunkText,
  DEFAULT_CHUNKING,
  extractText,
  UnreadableFileError,
  UnsupportedFileError,
  type ChunkingOptions,
  type ExtractedText,
  type TextChunk,
} from '../documents/index.ts';
import { formatBytes, storageEstimate } from '../downloads/storage-quota.ts';
import { WindowedEmbedder } from './embed-in-windows.ts';
import { LibraryError, notFound } from './library-error.ts';
import { DEFAULT_LIBRARY_LIMITS, type LibraryLimits } from './library-limits.ts';
import type {
  ExpiresAfter,
  FileCounts,
  FileDeleted,
  FileObject,
  FilePurpose,
  LastError,
  ListPage,
  Metadata,
  SearchResult,
  VectorStore,
  VectorStoreDeleted,
  VectorStoreFile,
  VectorStoreFileBatch,
  VectorStoreFileDeleted,
  VectorStoreFileStatus,
} from './records.ts';

/** A file as kept: its wire object, when it was stored (for ordering within a second) and its media type. */
interface FileRow {
  file: FileObject;
  createdMs: number;
  mimeType: string;
}

interface StoreRow {
  store: Omit<VectorStore, 'file_counts' | 'usage_bytes' | 'status'> & { status: 'expired' | 'active' };
  createdMs: number;
  /** The model its chunks are embedded with (and its queries): the first embeddings model when it was created. */
  embeddingModel: string | null;
}

interface StoreFileRow {
  file: VectorStoreFile;
  /** The key it belongs to: a resumed indexing finds it from the row alone. */
  owner: string;
  createdMs: number;
  batchId: string | null;
  /** Chunks it has once indexed (0 until then): a store's chunks are counted against its limit from these. */
  chunks: number;
}

interface BatchRow {
  batch: Omit<VectorStoreFileBatch, 'file_counts' | 'status'> & { status: 'in_progress' | 'cancelled' };
  createdMs: number;
}

/** One stored run of a file's chunks: each run is written as it is embedded, so that indexing resumes after it. */
interface ChunkRun {
  texts: string[];
  vectors: Float32Array[][];
}

/**
 * A file's text as extracted, kept once for every store it is attached to and for its content route, so that a file is
 * read once. `extracting` is written before the read: a context that finds it with no read of its own under way was
 * stopped while reading the file (a crash, or a process killed out of memory), and fails the file rather than read it
 * again, in case the file is what stopped it.
 */
type KeptText =
  | { state: 'extracting'; startedMs: number }
  | { state: 'extracted'; text: string }
  | { state: 'failed'; error: LastError };

type TextResult = { text: string } | { error: LastError };

/** A file waiting to be indexed into a store, with what its earlier turns made. */
interface IndexJob {
  owner: string;
  storeId: string;
  fileId: string;
  /** Its text, being read (started on its first turn). */
  text?: Promise<TextResult>;
  /** Its chunks and its text's size in bytes, once read and cut. */
  chunks?: TextChunk[];
  textBytes?: number;
  /** Chunks embedded and stored so far. */
  done?: number;
  /** Set when the file is detached (or attached anew) while waiting: the job ends at its next check. */
  dropped?: boolean;
}

interface IndexRow {
  snapshot: string;
  /** The files whose chunks the snapshot holds: if they are not the store's completed files, it is rebuilt. */
  fileIds: string[];
}

/** How a file's text is read: {@link extractText}'s contract (its errors say why a file cannot be read). */
export type TextExtractor = (bytes: Uint8Array, filename: string, mimeType?: string) => Promise<ExtractedText>;

/** Indexing progress, for a page that shows it. */
export interface IndexingProgress {
  vectorStoreId: string;
  fileId: string;
  chunksDone: number;
  chunksTotal: number;
}

export interface FileLibraryOptions {
  storage: DocumentStorage;
  /** What embeds chunks and queries. */
  engine: Engine;
  /** The embeddings model of new vector stores (default: the engine's first embeddings model). */
  embeddingModel?: string;
  limits?: Partial<LibraryLimits>;
  now?: () => number;
  onProgress?: (progress: IndexingProgress) => void;
  /** Told of each spell of background indexing as it starts, until it ends (a service worker waits for it). */
  keepAlive?: (work: Promise<void>) => void;
  /** Told of a failure while indexing that is not the file's own (a model that failed to load). */
  onError?: (error: unknown) => void;
  /**
   * How a file's text is read (default: {@link extractText}, on this thread). Node's server reads in a worker thread
   * with a time and memory budget (scripts/text-extraction.ts), so that no document holds the thread requests are
   * answered on.
   */
  extract?: TextExtractor;
}

export interface ListParams {
  limit?: number | undefined;
  order?: 'asc' | 'desc' | undefined;
  after?: string | undefined;
  before?: string | undefined;
}

export interface AttachParams {
  attributes?: Attributes | null | undefined;
  chunking?: ChunkingOptions | undefined;
}

export interface VectorStoreParams {
  name?: string | undefined;
  description?: string | undefined;
  metadata?: Metadata | null | undefined;
  expiresAfter?: ExpiresAfter | null | undefined;
}

export interface LibrarySearch {
  queries: string[];
  maxResults: number;
  filter?: AttributeFilter | undefined;
  scoreThreshold?: number | undefined;
  weights?: SearchOptions['weights'];
  signal?: AbortSignal | undefined;
}

/** Engine failures that may pass: the file waits for the next use of the library. */
const RETRYABLE = new Set<EngineErrorKind>([
  'unavailable',
  'engine_lost',
  'device_lost',
  'version_mismatch',
  'download_failed',
  'aborted',
  'internal',
  'rate_limited',
  'upstream_error',
  'upstream_unavailable',
]);

/** Chunks embedded in one engine call. */
const EMBED_BATCH = 16;
/**
 * Runs of {@link EMBED_BATCH} chunks a file embeds in one turn before the next key's file has its turn: 64 chunks, a
 * second or two of a small embeddings model on a CPU. Keys take turns, so a key's small file waits at most for a turn
 * of each other key's, however much they attached (issue 63: one FIFO queue made a 38-byte file wait 58.7 s).
 */
const RUNS_PER_TURN = 4;
/** How long a turn waits for a file's text while another key's file could index instead. */
const TEXT_WAIT_MS = 200;
const DAY_S = 86_400;

/** An uploaded file as the files route reads it from the multipart body. */
interface FileUpload {
  bytes: Uint8Array;
  filename: string;
  mimeType: string;
  purpose: FilePurpose;
  expiresAfterS?: number;
  /**
   * The id to keep it under, for a writer that must be able to write it again (a batch's output file, written anew
   * when a batch resumes its finalizing): a file of this id is replaced. New ids are minted otherwise.
   */
  id?: string;
}

/** Purposes whose files are data for the Batch API, never documents: not indexed, so no vector store takes them. */
const UNSEARCHABLE: readonly FilePurpose[] = ['batch', 'batch_output'];

/**
 * The Files and Vector Stores of every key: files kept with their bytes, vector stores of files, each file's text
 * extracted once (and kept), cut into chunks, embedded on the device and indexed (full text and vectors) in the
 * background, and searched. Every call names the key (`owner`) it is for and sees only that key's files and stores.
 *
 * Indexing runs one file at a time, keys taking turns (each key's files in the order they were attached, a turn at
 * most {@link RUNS_PER_TURN} runs of {@link EMBED_BATCH} chunks), each run stored as it is made. A file left
 * `in_progress` when the context ended (a tab closed, the service worker stopped) resumes after its last stored run
 * the next time the library is used.
 */
export class FileLibrary {
  readonly #storage: DocumentStorage;
  readonly #engine: Engine;
  readonly #embedder: WindowedEmbedder;
  readonly #limits: LibraryLimits;
  readonly #now: () => number;
  readonly #options: FileLibraryOptions;
  readonly #extract: TextExtractor;
  /** Each key's files waiting to be indexed, the keys in the order of their turns: the first is served next. */
  readonly #queues = new Map<string, IndexJob[]>();
  /** Texts being read in this context, by owner and file: a file attached to several stores is read once. */
  readonly #reading = new Map<string, Promise<TextResult>>();
  #draining: Promise<void> | undefined;
  #resumed: Promise<void> | undefined;
  /** Each store's index, loaded on its first search or indexed file and kept: never rebuilt per query. */
  readonly #indexes = new Map<string, Promise<HybridIndex>>();
  /** Stores whose index has changed since it was last written. */
  readonly #unsaved = new Set<string>();

  constructor(options: FileLibraryOptions) {
    this.#options = options;
    this.#storage = options.storage;
    this.#engine = options.engine;
    this.#embedder = new WindowedEmbedder(options.engine);
    this.#limits = { ...DEFAULT_LIBRARY_LIMITS, ...options.limits };
    this.#now = options.now ?? Date.now;
    this.#extract = options.extract ?? extractText;
  }

  get limits(): Readonly<LibraryLimits> {
    return this.#limits;
  }

  /** Resolves once every file attached so far is indexed (or failed): for tests and benchmarks. */
  async idle(): Promise<void> {
    await this.#resume();
    while (this.#draining) await this.#draining;
  }

  // ---- Files ----

  /**
   * One key's uploads are stored one at a time, each checked against what the key holds once the one before it is
   * stored: checked side by side, twenty uploads of 30 MiB each saw the same usage and all passed a 512 MiB limit
   * (issue 63). Keys do not wait for each other.
   */
  #uploads = new Map<string, Promise<void>>();
  /** Bytes of each key's uploads received so far, of those arriving or being stored. */
  readonly #uploadBytes = new Map<string, number>();

  /**
   * An upload of `owner`'s, admitted as its body arrives: `received(size)` is told its bytes so far, and refuses it
   * with 429 when the key's uploads in flight together would pass `limits.maxUploadBytesInFlight` (bodies are held in
   * memory whole, so this bounds what one key's uploads take; a key's upload alone is never refused by it). `release()`
   * once it is stored or refused.
   */
  uploadLease(owner: string): { received(size: number): void; release(): void } {
    let counted = 0;
    const limit = this.#limits.maxUploadBytesInFlight;
    const add = (bytes: number) => {
      const total = (this.#uploadBytes.get(owner) ?? 0) + bytes;
      if (total > 0) this.#uploadBytes.set(owner, total);
      else this.#uploadBytes.delete(owner);
      counted += bytes;
    };
    return {
      received: (size) => {
        const others = (this.#uploadBytes.get(owner) ?? 0) - counted;
        if (others > 0 && others + size > limit) {
          throw new LibraryError(
            429,
            `This key's uploads arriving at once hold ${others + size} bytes, over the limit of ${limit} bytes ` +
              '(limits.maxUploadBytesInFlight). Send fewer at once, or retry once they are stored.',
            { code: 'rate_limit_exceeded' },
          );
        }
        add(size - counted);
      },
      release: () => add(-counted),
    };
  }

  async createFile(owner: string, upload: FileUpload): Promise<FileObject> {
    // Each upload waits for the key's one before it to settle (`settled` never rejects: a refusal is its caller's).
    const previous = this.#uploads.get(owner) ?? Promise.resolve();
    const stored = previous.then(() => this.#keepFile(owner, upload));
    const settled = stored.then(
      () => {},
      () => {},
    );
    this.#uploads.set(owner, settled);
    void settled.then(() => {
      if (this.#uploads.get(owner) === settled) this.#uploads.delete(owner);
    });
    return stored;
  }

  async #keepFile(owner: string, upload: FileUpload): Promise<FileObject> {
    const { maxFileBytes, maxStorageBytes, maxFiles } = this.#limits;
    if (upload.bytes.length > maxFileBytes) {
      throw new LibraryError(
        413,
        `The file is ${upload.bytes.length} bytes, over the limit of ${maxFileBytes} bytes per file (limits.maxFileBytes).`,
        { param: 'file', code: 'file_too_large' },
      );
    }
    const files = (await this.#storage.list<FileRow>('files', [owner])).filter((row) => row.file.id !== upload.id);
    if (files.length >= maxFiles) {
      throw new LibraryError(
        400,
        `This key already keeps ${files.length} files, the limit (limits.maxFiles). Delete some to upload more.`,
        { param: 'file', code: 'too_many_files' },
      );
    }
    const used = files.reduce((sum, row) => sum + row.file.bytes, 0);
    if (used + upload.bytes.length > maxStorageBytes) {
      throw new LibraryError(
        413,
        `This key's files take ${used} bytes; this one would take them over the limit of ${maxStorageBytes} bytes ` +
          '(limits.maxStorageBytes). Delete some files to upload more.',
        { param: 'file', code: 'storage_limit_exceeded' },
      );
    }
    await ensureOriginRoom(upload.bytes.length);
    const createdMs = this.#now();
    const createdAt = Math.floor(createdMs / 1000);
    const file: FileObject = {
      id: upload.id ?? newId('file-'),
      object: 'file',
      bytes: upload.bytes.length,
      created_at: createdAt,
      filename: upload.filename,
      purpose: upload.purpose,
      status: 'processed',
      expires_at: upload.expiresAfterS === undefined ? null : createdAt + upload.expiresAfterS,
    };
    // The bytes first: a file listed is a file whose content can be read.
    try {
      await this.#storage.put('file_bytes', [owner, file.id], upload.bytes);
      await this.#storage.put('files', [owner, file.id], {
        file,
        createdMs,
        mimeType: upload.mimeType,
      } satisfies FileRow);
    } catch (error) {
      await this.#storage.delete('file_bytes', [owner, file.id]).catch(() => false);
      if (isStorageFull(error)) throw originFull();
      throw error;
    }
    return file;
  }

  async listFiles(owner: string, params: ListParams & { purpose?: string | undefined }): Promise<ListPage<FileObject>> {
    const rows = (await this.#liveFiles(owner)).filter((row) => !params.purpose || row.file.purpose === params.purpose);
    return page(rows, params, (row) => row.file);
  }

  async retrieveFile(owner: string, id: string): Promise<FileObject> {
    return (await this.#file(owner, id)).file;
  }

  async fileContent(owner: string, id: string): Promise<{ file: FileObject; bytes: Uint8Array; mimeType: string }> {
    const row = await this.#file(owner, id);
    const bytes = await this.#storage.get<Uint8Array>('file_bytes', [owner, id]);
    if (!bytes) throw notFound('file', id, 'file_id');
    return { file: row.file, bytes, mimeType: row.mimeType };
  }

  /** Deletes a file and removes it from every vector store of its key, as OpenAI's does. */
  async deleteFile(owner: string, id: string): Promise<FileDeleted> {
    await this.#file(owner, id);
    await this.#removeFile(owner, id);
    return { id, object: 'file', deleted: true };
  }

  async #removeFile(owner: string, id: string): Promise<void> {
    for (const { store } of await this.#storage.list<StoreRow>('vector_stores', [owner])) {
      if (await this.#storage.get('vector_store_files', [owner, store.id, id])) await this.#detach(owner, store.id, id);
    }
    await this.#storage.delete('files', [owner, id]);
    await this.#storage.delete('file_bytes', [owner, id]);
    await this.#storage.delete('file_texts', [owner, id]);
  }

  // ---- Vector stores ----

  async createVectorStore(
    owner: string,
    params: VectorStoreParams & { fileIds?: string[] | undefined; chunking?: ChunkingOptions | undefined },
  ): Promise<VectorStore> {
    const stores = await this.#storage.list<StoreRow>('vector_stores', [owner]);
    if (stores.length >= this.#limits.maxVectorStores) {
      throw new LibraryError(
        400,
        `This key already keeps ${stores.length} vector stores, the limit (limits.maxVectorStores).`,
        { code: 'too_many_vector_stores' },
      );
    }
    const fileIds = params.fileIds ?? [];
    await this.#checkFiles(owner, fileIds, 'file_ids');
    const createdMs = this.#now();
    const createdAt = Math.floor(createdMs / 1000);
    const row: StoreRow = {
      store: {
        id: newId('vs_'),
        object: 'vector_store',
        created_at: createdAt,
        name: params.name ?? '',
        description: params.description ?? null,
        expires_at: null,
        last_active_at: createdAt,
        metadata: params.metadata ?? null,
        status: 'active',
      },
      createdMs,
      embeddingModel: this.#options.embeddingModel ?? (await this.#firstEmbeddingModel()),
    };
    setExpiry(row, params.expiresAfter ?? undefined);
    await this.#storage.put('vector_stores', [owner, row.store.id], row);
    for (const fileId of fileIds) await this.#attach(owner, row.store.id, fileId, { chunking: params.chunking }, null);
    return this.#storeView(owner, row);
  }

  async listVectorStores(owner: string, params: ListParams): Promise<ListPage<VectorStore>> {
    const rows = await this.#storage.list<StoreRow>('vector_stores', [owner]);
    const views = await Promise.all(
      rows.map(async (row) => ({ createdMs: row.createdMs, view: await this.#storeView(owner, row) })),
    );
    return page(
      views,
      params,
      (entry) => entry.view,
      (entry) => entry.view.id,
    );
  }

  async retrieveVectorStore(owner: string, id: string): Promise<VectorStore> {
    return this.#storeView(owner, await this.#store(owner, id));
  }

  async modifyVectorStore(owner: string, id: string, params: VectorStoreParams): Promise<VectorStore> {
    const row = await this.#store(owner, id);
    if (params.name !== undefined) row.store.name = params.name;
    if (params.metadata !== undefined) row.store.metadata = params.metadata;
    if (params.expiresAfter !== undefined) setExpiry(row, params.expiresAfter ?? undefined);
    await this.#storage.put('vector_stores', [owner, id], row);
    return this.#storeView(owner, row);
  }

  async deleteVectorStore(owner: string, id: string): Promise<VectorStoreDeleted> {
    await this.#store(owner, id);
    this.#indexes.delete(indexKey(owner, id));
    this.#unsaved.delete(indexKey(owner, id));
    await this.#storage.delete('vector_stores', [owner, id]);
    await this.#storage.deleteAll('vector_store_files', [owner, id]);
    await this.#storage.deleteAll('file_batches', [owner, id]);
    await this.#storage.deleteAll('chunks', [owner, id]);
    await this.#storage.delete('indexes', [owner, id]);
    return { id, object: 'vector_store.deleted', deleted: true };
  }

  // ---- Vector store files ----

  async attachFile(owner: string, storeId: string, fileId: string, params: AttachParams): Promise<VectorStoreFile> {
    await this.#store(owner, storeId);
    await this.#checkFiles(owner, [fileId], 'file_id');
    return this.#attach(owner, storeId, fileId, params, null);
  }

  async listStoreFiles(
    owner: string,
    storeId: string,
    params: ListParams & { filter?: VectorStoreFileStatus | undefined; batchId?: string | undefined },
  ): Promise<ListPage<VectorStoreFile>> {
    await this.#store(owner, storeId);
    if (params.batchId !== undefined) await this.#batch(owner, storeId, params.batchId);
    const rows = (await this.#storage.list<StoreFileRow>('vector_store_files', [owner, storeId])).filter(
      (row) =>
        (!params.filter || row.file.status === params.filter) &&
        (params.batchId === undefined || row.batchId === params.batchId),
    );
    return page(rows, params, (row) => row.file);
  }

  async retrieveStoreFile(owner: string, storeId: string, fileId: string): Promise<VectorStoreFile> {
    return (await this.#storeFile(owner, storeId, fileId)).file;
  }

  async updateStoreFile(
    owner: string,
    storeId: string,
    fileId: string,
    attributes: Attributes | null,
  ): Promise<VectorStoreFile> {
    const row = await this.#storeFile(owner, storeId, fileId);
    row.file.attributes = attributes;
    await this.#storage.put('vector_store_files', [owner, storeId, fileId], row);
    const index = this.#indexes.get(indexKey(owner, storeId));
    if (index) (await index).setAttributes(fileId, attributes ?? {});
    return row.file;
  }

  async detachFile(owner: string, storeId: string, fileId: string): Promise<VectorStoreFileDeleted> {
    await this.#storeFile(owner, storeId, fileId);
    await this.#detach(owner, storeId, fileId);
    return { id: fileId, object: 'vector_store.file.deleted', deleted: true };
  }

  /**
   * The text the file was indexed from (`GET …/files/{id}/content`): as kept when it was read, never read again; none
   * for a file that could not be read.
   */
  async storeFileContent(owner: string, storeId: string, fileId: string): Promise<{ type: 'text'; text: string }[]> {
    await this.#storeFile(owner, storeId, fileId);
    await this.#file(owner, fileId);
    const result = await this.#textOf(owner, fileId);
    return 'text' in result ? [{ type: 'text', text: result.text }] : [];
  }

  // ---- File batches ----

  async createBatch(
    owner: string,
    storeId: string,
    files: { fileId: string; attributes?: Attributes | null | undefined; chunking?: ChunkingOptions | undefined }[],
  ): Promise<VectorStoreFileBatch> {
    await this.#store(owner, storeId);
    await this.#checkFiles(
      owner,
      files.map((f) => f.fileId),
      'file_ids',
    );
    const createdMs = this.#now();
    const row: BatchRow = {
      batch: {
        id: newId('vsfb_'),
        object: 'vector_store.files_batch',
        created_at: Math.floor(createdMs / 1000),
        vector_store_id: storeId,
        status: 'in_progress',
      },
      createdMs,
    };
    await this.#storage.put('file_batches', [owner, storeId, row.batch.id], row);
    for (const { fileId, ...params } of files) await this.#attach(owner, storeId, fileId, params, row.batch.id);
    return this.#batchView(owner, row);
  }

  async retrieveBatch(owner: string, storeId: string, batchId: string): Promise<VectorStoreFileBatch> {
    return this.#batchView(owner, await this.#batch(owner, storeId, batchId));
  }

  /** Cancels what of the batch is not indexed yet; what is indexed stays. */
  async cancelBatch(owner: string, storeId: string, batchId: string): Promise<VectorStoreFileBatch> {
    const row = await this.#batch(owner, storeId, batchId);
    row.batch.status = 'cancelled';
    await this.#storage.put('file_batches', [owner, storeId, batchId], row);
    for (const file of await this.#storage.list<StoreFileRow>('vector_store_files', [owner, storeId])) {
      if (file.batchId !== batchId || file.file.status !== 'in_progress') continue;
      file.file.status = 'cancelled';
      await this.#storage.put('vector_store_files', [owner, storeId, file.file.id], file);
      await this.#storage.deleteAll('chunks', [owner, storeId, file.file.id]);
    }
    return this.#batchView(owner, row);
  }

  // ---- Search ----

  /**
   * Searches the key's stores: each store's index with the queries (embedded with that store's model), the hits of
   * all merged by score. Using a store keeps it alive: its `last_active_at` (and so its expiry) moves to now.
   */
  async search(owner: string, storeIds: string[], params: LibrarySearch): Promise<SearchResult[]> {
    const rows = await Promise.all(storeIds.map((id) => this.#store(owner, id)));
    const hits: SearchResult[] = [];
    for (const row of rows) {
      if (expired(row, this.#now())) {
        throw new LibraryError(400, `Vector store '${row.store.id}' has expired and can no longer be searched.`, {
          param: 'vector_store_id',
          code: 'vector_store_expired',
        });
      }
      await this.#touch(owner, row);
      const index = await this.#index(owner, row.store.id);
      if (index.size === 0) continue;
      const queryVectors = row.embeddingModel
        ? (await this.#embedder.embed(row.embeddingModel, params.queries, params.signal)).map((w) => w[0]!)
        : undefined;
      const found = index.search({
        queries: params.queries,
        ...(queryVectors && { queryVectors }),
        maxResults: params.maxResults,
        ...(params.filter && { filter: params.filter }),
        ...(params.scoreThreshold !== undefined && { scoreThreshold: params.scoreThreshold }),
        ...(params.weights && { weights: params.weights }),
      });
      for (const { chunk, score } of found) {
        hits.push({
          file_id: chunk.fileId,
          filename: chunk.filename,
          score,
          attributes: Object.keys(chunk.attributes).length ? chunk.attributes : null,
          content: [{ type: 'text', text: chunk.text }],
        });
      }
    }
    // An index built here (no snapshot, or a stale one) is written now, in the background, so that the next context
    // restores it rather than builds it again (0.2 s against 1.3 s at 10,000 chunks); indexing writes its own.
    if (this.#unsaved.size && !this.#draining)
      void this.#saveIndexes().catch((error) => this.#options.onError?.(error));
    return hits.sort((a, b) => b.score - a.score).slice(0, params.maxResults);
  }

  // ---- Internals ----

  async #liveFiles(owner: string): Promise<FileRow[]> {
    void this.#resume();
    const now = Math.floor(this.#now() / 1000);
    const rows = await this.#storage.list<FileRow>('files', [owner]);
    const live: FileRow[] = [];
    for (const row of rows) {
      // An expired file is deleted when next seen, as OpenAI's are (its `expires_after`).
      if (row.file.expires_at != null && row.file.expires_at <= now) await this.#removeFile(owner, row.file.id);
      else live.push(row);
    }
    return live;
  }

  async #file(owner: string, id: string): Promise<FileRow> {
    const row = await this.#storage.get<FileRow>('files', [owner, id]);
    if (!row) throw notFound('file', id, 'file_id');
    if (row.file.expires_at != null && row.file.expires_at <= Math.floor(this.#now() / 1000)) {
      await this.#removeFile(owner, id);
      throw notFound('file', id, 'file_id');
    }
    return row;
  }

  async #checkFiles(owner: string, ids: string[], param: string): Promise<void> {
    if (ids.length > this.#limits.maxFilesPerBatch) {
      throw new LibraryError(
        400,
        `At most ${this.#limits.maxFilesPerBatch} files may be added at once (limits.maxFilesPerBatch); got ${ids.length}.`,
        { param },
      );
    }
    for (const id of ids) {
      const row = await this.#storage.get<FileRow>('files', [owner, id]);
      if (!row) throw new LibraryError(404, `No file found with id '${id}'.`, { param, code: 'not_found' });
      if (UNSEARCHABLE.includes(row.file.purpose)) {
        throw new LibraryError(
          400,
          `File '${id}' has purpose '${row.file.purpose}': batch files are not indexed for search. Upload it ` +
            "with purpose 'assistants' or 'user_data' to search it.",
          { param, code: 'invalid_file' },
        );
      }
    }
  }

  async #store(owner: string, id: string): Promise<StoreRow> {
    void this.#resume();
    const row = await this.#storage.get<StoreRow>('vector_stores', [owner, id]);
    if (!row) throw notFound('vector store', id, 'vector_store_id');
    return row;
  }

  async #storeFile(owner: string, storeId: string, fileId: string): Promise<StoreFileRow> {
    await this.#store(owner, storeId);
    const row = await this.#storage.get<StoreFileRow>('vector_store_files', [owner, storeId, fileId]);
    if (!row) throw notFound('file in this vector store', fileId, 'file_id');
    return row;
  }

  async #batch(owner: string, storeId: string, batchId: string): Promise<BatchRow> {
    await this.#store(owner, storeId);
    const row = await this.#storage.get<BatchRow>('file_batches', [owner, storeId, batchId]);
    if (!row) throw notFound('file batch', batchId, 'batch_id');
    return row;
  }

  async #storeView(owner: string, row: StoreRow): Promise<VectorStore> {
    const files = await this.#storage.list<StoreFileRow>('vector_store_files', [owner, row.store.id]);
    const counts = countFiles(files);
    const { status: _status, ...store } = row.store;
    return {
      ...store,
      usage_bytes: files.reduce((sum, f) => sum + f.file.usage_bytes, 0),
      file_counts: counts,
      status: expired(row, this.#now()) ? 'expired' : counts.in_progress ? 'in_progress' : 'completed',
    };
  }

  async #batchView(owner: string, row: BatchRow): Promise<VectorStoreFileBatch> {
    const files = (
      await this.#storage.list<StoreFileRow>('vector_store_files', [owner, row.batch.vector_store_id])
    ).filter((f) => f.batchId === row.batch.id);
    const counts = countFiles(files);
    const status: VectorStoreFileStatus =
      row.batch.status === 'cancelled'
        ? 'cancelled'
        : counts.in_progress
          ? 'in_progress'
          : counts.failed && counts.failed === counts.total
            ? 'failed'
            : 'completed';
    return { ...row.batch, status, file_counts: counts };
  }

  async #touch(owner: string, row: StoreRow): Promise<void> {
    const now = Math.floor(this.#now() / 1000);
    // `last_active_at` is in seconds: searches within the same second write nothing.
    if (row.store.last_active_at === now) return;
    row.store.last_active_at = now;
    setExpiry(row, row.store.expires_after);
    await this.#storage.put('vector_stores', [owner, row.store.id], row);
  }

  async #firstEmbeddingModel(): Promise<string | null> {
    const cards = await this.#engine.models();
    return cards.find((card) => card.task === 'embeddings')?.id ?? null;
  }

  /** Attaches a file (again: an attached file is indexed anew, with its new attributes) and queues its indexing. */
  async #attach(
    owner: string,
    storeId: string,
    fileId: string,
    params: AttachParams,
    batchId: string | null,
  ): Promise<VectorStoreFile> {
    if (await this.#storage.get('vector_store_files', [owner, storeId, fileId]))
      await this.#detach(owner, storeId, fileId);
    const chunking = params.chunking ?? DEFAULT_CHUNKING;
    const createdMs = this.#now();
    const row: StoreFileRow = {
      file: {
        id: fileId,
        object: 'vector_store.file',
        created_at: Math.floor(createdMs / 1000),
        usage_bytes: 0,
        vector_store_id: storeId,
        status: 'in_progress',
        last_error: null,
        chunking_strategy: {
          type: 'static',
          static: { max_chunk_size_tokens: chunking.maxChunkTokens, chunk_overlap_tokens: chunking.overlapTokens },
        },
        attributes: params.attributes ?? null,
      },
      owner,
      createdMs,
      batchId,
      chunks: 0,
    };
    await this.#storage.put('vector_store_files', [owner, storeId, fileId], row);
    this.#enqueue({ owner, storeId, fileId });
    return row.file;
  }

  async #detach(owner: string, storeId: string, fileId: string): Promise<void> {
    const jobs = this.#queues.get(owner) ?? [];
    for (const job of jobs.filter((j) => j.storeId === storeId && j.fileId === fileId)) {
      job.dropped = true;
      jobs.splice(jobs.indexOf(job), 1);
    }
    await this.#storage.delete('vector_store_files', [owner, storeId, fileId]);
    await this.#storage.deleteAll('chunks', [owner, storeId, fileId]);
    const key = indexKey(owner, storeId);
    const index = this.#indexes.get(key);
    if (index) {
      (await index).removeFile(fileId);
      this.#unsaved.add(key);
      await this.#saveIndexes();
    } else {
      // Not loaded: the stored snapshot names a file that is gone, so it is rebuilt when next loaded.
    }
  }

  #enqueue(job: IndexJob): void {
    const jobs = this.#queues.get(job.owner);
    if (jobs) jobs.push(job);
    else this.#queues.set(job.owner, [job]);
    if (this.#draining) return;
    this.#draining = this.#drain().finally(() => (this.#draining = undefined));
    this.#options.keepAlive?.(this.#draining);
  }

  #queued(owner: string, storeId: string, fileId?: string): boolean {
    return (this.#queues.get(owner) ?? []).some(
      (job) => job.storeId === storeId && (fileId === undefined || job.fileId === fileId),
    );
  }

  async #resume(): Promise<void> {
    this.#resumed ??= (async () => {
      const rows = await this.#storage.list<StoreFileRow>('vector_store_files', []);
      for (const row of rows) {
        if (row.file.status !== 'in_progress') continue;
        const { owner } = row;
        const storeId = row.file.vector_store_id;
        if (!this.#queued(owner, storeId, row.file.id)) this.#enqueue({ owner, storeId, fileId: row.file.id });
      }
    })();
    return this.#resumed;
  }

  /** Serves the keys in turn: a turn of the first key's first file, then that key goes to the back of the line. */
  async #drain(): Promise<void> {
    for (let next = this.#queues.entries().next(); !next.done; next = this.#queues.entries().next()) {
      const [owner, jobs] = next.value;
      const job = jobs[0];
      if (!job) {
        this.#queues.delete(owner);
        continue;
      }
      let over = true;
      try {
        over = await this.#indexTurn(job);
      } catch (error) {
        // The file stays `in_progress`: the model may load next time (a host tab back, a download finished), so the
        // next use of the library resumes it. The operator hears of it now.
        this.#resumed = undefined;
        this.#options.onError?.(error);
      }
      // By identity: the key's list may have changed during the turn (a file detached, another attached).
      if (over && jobs.includes(job)) jobs.splice(jobs.indexOf(job), 1);
      this.#queues.delete(owner);
      if (jobs.length) this.#queues.set(owner, jobs);
      // A store's index is written when no more of its files wait: one write for a batch of a hundred files.
      if (over && !this.#queued(owner, job.storeId)) await this.#saveIndexes();
    }
  }

  /**
   * One turn of a file's indexing: its text read and cut (on its first turn), then up to {@link RUNS_PER_TURN} runs of
   * chunks embedded and stored. Resolves true when the file is over (indexed, failed, or no longer wanted), false when
   * it wants another turn.
   */
  async #indexTurn(job: IndexJob): Promise<boolean> {
    const { owner, storeId, fileId } = job;
    const key: [string, string, string] = [owner, storeId, fileId];
    const stillWanted = async () =>
      !job.dropped && (await this.#storage.get<StoreFileRow>('vector_store_files', key))?.file.status === 'in_progress';
    const row = await this.#storage.get<StoreFileRow>('vector_store_files', key);
    const store = await this.#storage.get<StoreRow>('vector_stores', [owner, storeId]);
    if (job.dropped || !row || !store || row.file.status !== 'in_progress') return true;
    /** The file is no longer wanted here (detached, cancelled, attached anew): what it stored goes, and it is over. */
    const abandon = async () => {
      await this.#storage.deleteAll('chunks', key);
      return true;
    };
    const fail = async (error: LastError) => {
      await this.#storage.deleteAll('chunks', key);
      if (!(await stillWanted())) return true;
      row.file.status = 'failed';
      row.file.last_error = error;
      await this.#storage.put('vector_store_files', key, row);
      return true;
    };

    if (!job.chunks) {
      job.text ??= this.#textOf(owner, fileId);
      // A long read (a large PDF, in a thread of its own in Node) holds no other key's files: they index meanwhile.
      if (this.#queues.size > 1 && !(await settlesWithin(job.text, TEXT_WAIT_MS))) return false;
      const result = await job.text;
      if ('error' in result) return fail(result.error);
      const { static: sizes } = row.file.chunking_strategy;
      const chunks = chunkText(result.text, {
        maxChunkTokens: sizes.max_chunk_size_tokens,
        overlapTokens: sizes.chunk_overlap_tokens,
      });
      const others = (await this.#storage.list<StoreFileRow>('vector_store_files', [owner, storeId]))
        .filter((f) => f.file.id !== fileId)
        .reduce((sum, f) => sum + f.chunks, 0);
      if (others + chunks.length > this.#limits.maxChunksPerStore) {
        return fail({
          code: 'invalid_file',
          message:
            `The file makes ${chunks.length} chunks; with the ${others} already in the store that is over the limit ` +
            `of ${this.#limits.maxChunksPerStore} chunks per vector store (limits.maxChunksPerStore).`,
        });
      }
      job.chunks = chunks;
      job.textBytes = new TextEncoder().encode(result.text).length;
    }
    const { chunks } = job;

    // Resume after the runs already stored: a run is written whole, so each stored run is complete.
    job.done ??= (await this.#storage.list<ChunkRun>('chunks', key)).reduce((sum, run) => sum + run.texts.length, 0);
    for (let turn = 0; job.done < chunks.length && turn < RUNS_PER_TURN; turn++) {
      if (!(await stillWanted())) return abandon();
      const texts = chunks.slice(job.done, job.done + EMBED_BATCH).map((c) => c.text);
      let vectors: Float32Array[][];
      try {
        vectors = store.embeddingModel ? await this.#embedder.embed(store.embeddingModel, texts) : texts.map(() => []);
      } catch (error) {
        // A refusal that no retry changes fails the file; anything else (no host tab, a download cut) resumes later.
        if (!(error instanceof EngineError) || (error.retry ?? RETRYABLE.has(error.kind))) throw error;
        return fail({ code: 'server_error', message: `The file could not be embedded: ${error.message}` });
      }
      try {
        await this.#storage.put('chunks', [...key, runKey(job.done)], { texts, vectors } satisfies ChunkRun);
      } catch (error) {
        if (!isStorageFull(error)) throw error;
        return fail({ code: 'server_error', message: originFull().message });
      }
      job.done += texts.length;
      this.#options.onProgress?.({ vectorStoreId: storeId, fileId, chunksDone: job.done, chunksTotal: chunks.length });
    }
    if (job.done < chunks.length) return false;
    if (!(await stillWanted())) return abandon();

    const indexed = await this.#storage.list<ChunkRun>('chunks', key);
    const dims = indexed.find((run) => run.vectors[0]?.[0])?.vectors[0]![0]!.length ?? 0;
    const fileRow = await this.#storage.get<FileRow>('files', [owner, fileId]);
    row.chunks = chunks.length;
    row.file.usage_bytes = job.textBytes! + chunks.length * dims * 4;
    row.file.status = 'completed';
    await this.#storage.put('vector_store_files', key, row);
    // Into the store's index, loaded (restored, or built from the chunks) if it is not: the drain writes its snapshot
    // when the store's last queued file is done, so that no later context builds it again.
    const index = await this.#index(owner, storeId);
    index.removeFile(fileId);
    index.add(toIndexed(fileId, fileRow?.file.filename ?? fileId, row.file.attributes, indexed));
    this.#unsaved.add(indexKey(owner, storeId));
    return true;
  }

  /** A file's text: as kept, or read now (once, however many stores and calls ask for it at the same time). */
  #textOf(owner: string, fileId: string): Promise<TextResult> {
    const key = `${owner}\u0000${fileId}`;
    let reading = this.#reading.get(key);
    if (!reading) {
      reading = this.#readText(owner, fileId).finally(() => this.#reading.delete(key));
      this.#reading.set(key, reading);
    }
    return reading;
  }

  async #readText(owner: string, fileId: string): Promise<TextResult> {
    const kept = await this.#storage.get<KeptText>('file_texts', [owner, fileId]);
    if (kept?.state === 'extracted') return { text: kept.text };
    if (kept?.state === 'failed') return { error: kept.error };
    if (kept?.state === 'extracting') {
      // No read of it runs here (it would have been found above): the context that began it stopped while reading.
      return this.#keepText(owner, fileId, {
        state: 'failed',
        error: {
          code: 'invalid_file',
          message:
            'Reading this file did not finish: the server stopped while it read it. It is not read again, in case ' +
            'the file is what stopped it; upload it again to retry.',
        },
      });
    }
    const fileRow = await this.#storage.get<FileRow>('files', [owner, fileId]);
    const bytes = await this.#storage.get<Uint8Array>('file_bytes', [owner, fileId]);
    if (!fileRow || !bytes)
      return { error: { code: 'invalid_file', message: 'The file was deleted before it was read.' } };
    await this.#storage.put('file_texts', [owner, fileId], { state: 'extracting', startedMs: this.#now() });
    let read: KeptText;
    try {
      read = { state: 'extracted', text: (await this.#extract(bytes, fileRow.file.filename, fileRow.mimeType)).text };
    } catch (error) {
      read = { state: 'failed', error: readingError(error) };
    }
    // A file deleted while it was read keeps nothing.
    if (!(await this.#storage.get('files', [owner, fileId]))) {
      await this.#storage.delete('file_texts', [owner, fileId]);
      return { error: { code: 'invalid_file', message: 'The file was deleted before it was read.' } };
    }
    return this.#keepText(owner, fileId, read);
  }

  async #keepText(
    owner: string,
    fileId: string,
    read: Exclude<KeptText, { state: 'extracting' }>,
  ): Promise<TextResult> {
    try {
      await this.#storage.put('file_texts', [owner, fileId], read);
    } catch (error) {
      if (!isStorageFull(error)) throw error;
      await this.#storage.delete('file_texts', [owner, fileId]).catch(() => false);
      return { error: { code: 'server_error', message: originFull().message } };
    }
    return read.state === 'extracted' ? { text: read.text } : { error: read.error };
  }

  /** A store's index: kept in memory once loaded, restored from its snapshot, or rebuilt from its chunks. */
  #index(owner: string, storeId: string): Promise<HybridIndex> {
    const key = indexKey(owner, storeId);
    let index = this.#indexes.get(key);
    if (!index) {
      index = this.#loadIndex(owner, storeId);
      this.#indexes.set(key, index);
      index.catch(() => this.#indexes.delete(key));
    }
    return index;
  }

  async #loadIndex(owner: string, storeId: string): Promise<HybridIndex> {
    const files = (await this.#storage.list<StoreFileRow>('vector_store_files', [owner, storeId])).filter(
      (f) => f.file.status === 'completed',
    );
    const chunks: IndexedChunk[] = [];
    for (const f of files) {
      const name = (await this.#storage.get<FileRow>('files', [owner, f.file.id]))?.file.filename ?? f.file.id;
      const runs = await this.#storage.list<ChunkRun>('chunks', [owner, storeId, f.file.id]);
      chunks.push(...toIndexed(f.file.id, name, f.file.attributes, runs));
    }
    const saved = await this.#storage.get<IndexRow>('indexes', [owner, storeId]);
    const ids = files.map((f) => f.file.id).sort();
    if (saved && sameList([...saved.fileIds].sort(), ids)) {
      try {
        return HybridIndex.restore(saved.snapshot, chunks);
      } catch {
        // A snapshot of another version of the index: rebuilt below.
      }
    }
    const index = new HybridIndex();
    index.add(chunks);
    this.#unsaved.add(indexKey(owner, storeId));
    return index;
  }

  async #saveIndexes(): Promise<void> {
    for (const key of [...this.#unsaved]) {
      this.#unsaved.delete(key);
      const index = await this.#indexes.get(key);
      if (!index) continue;
      const [owner, storeId] = key.split('\u0000') as [string, string];
      const files = (await this.#storage.list<StoreFileRow>('vector_store_files', [owner, storeId]))
        .filter((f) => f.file.status === 'completed')
        .map((f) => f.file.id);
      await this.#storage.put('indexes', [owner, storeId], {
        snapshot: index.fullTextSnapshot(),
        fileIds: files,
      } satisfies IndexRow);
    }
  }
}

/** Why a file's text could not be read, as its vector store files say. */
function readingError(error: unknown): LastError {
  if (error instanceof UnsupportedFileError) return { code: 'unsupported_file', message: error.message };
  if (error instanceof UnreadableFileError) return { code: 'invalid_file', message: error.message };
  return { code: 'server_error', message: `The file could not be read: ${(error as Error).message}` };
}

/** Whether `promise` settles within `ms`: true once it has (whether it resolved or rejected), false at the deadline. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  const settled = promise.then(
    () => true,
    () => true,
  );
  try {
    return await Promise.race([settled, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * What an upload needs of the origin's storage beyond its bytes: its chunks' text and vectors and the index, about as
 * much again. Where the browser says (the Storage API), an upload that would not fit is refused before it is stored.
 */
const ROOM_PER_BYTE = 2;

async function ensureOriginRoom(bytes: number): Promise<void> {
  const estimate = await storageEstimate();
  if (estimate && estimate.free < bytes * ROOM_PER_BYTE) throw originFull(estimate.free);
}

const originFull = (free?: number) =>
  new LibraryError(
    413,
    "This site's storage on the device is full" +
      (free === undefined ? '' : ` (${formatBytes(free)} free)`) +
      ': the file and its index do not fit. Free space (delete files or vector stores, or remove stored models), or ' +
      'ask the browser to keep more (navigator.storage.persist).',
    { param: 'file', code: 'storage_full' },
  );

/** The browser's error for an origin over its quota (IndexedDB's QuotaExceededError), or a full disk in Node. */
const isStorageFull = (error: unknown) =>
  typeof error === 'object' &&
  error !== null &&
  ((error as { name?: unknown }).name === 'QuotaExceededError' || (error as { code?: unknown }).code === 'ENOSPC');

function toIndexed(fileId: string, filename: string, attributes: Attributes | null, runs: ChunkRun[]): IndexedChunk[] {
  const chunks: IndexedChunk[] = [];
  for (const run of runs) {
    run.texts.forEach((text, i) => {
      chunks.push({
        id: `${fileId}#${chunks.length}`,
        fileId,
        filename,
        text,
        attributes: attributes ?? {},
        vectors: run.vectors[i] ?? [],
      });
    });
  }
  return chunks;
}

function countFiles(files: StoreFileRow[]): FileCounts {
  const counts: FileCounts = { in_progress: 0, completed: 0, failed: 0, cancelled: 0, total: files.length };
  for (const f of files) counts[f.file.status] += 1;
  return counts;
}

function setExpiry(row: StoreRow, after: ExpiresAfter | undefined): void {
  if (!after) {
    delete row.store.expires_after;
    row.store.expires_at = null;
    return;
  }
  row.store.expires_after = after;
  row.store.expires_at = (row.store.last_active_at ?? row.store.created_at) + after.days * DAY_S;
}

const expired = (row: StoreRow, nowMs: number) =>
  row.store.expires_at !== null && row.store.expires_at <= Math.floor(nowMs / 1000);

const indexKey = (owner: string, storeId: string) => `${owner}\u0000${storeId}`;

/** A run's key: its first chunk's position, zero-padded so that runs list in order. */
const runKey = (first: number) => String(first).padStart(9, '0');

const sameList = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

function newId(prefix: 'file-' | 'vs_' | 'vsfb_'): string {
  return prefix + crypto.randomUUID().replace(/-/g, '').slice(0, 24);
}

/**
 * A cursor page, as OpenAI's lists are: `order` by creation (`desc` by default), `after`/`before` an id of the
 * ordering, at most `limit` (default 20).
 */
function page<R extends { createdMs: number }, T extends { id: string }>(
  rows: R[],
  params: ListParams,
  view: (row: R) => T,
  id: (row: R) => string = (row) => view(row).id,
): ListPage<T> {
  const sorted = [...rows].sort((a, b) => a.createdMs - b.createdMs || id(a).localeCompare(id(b)));
  if (params.order !== 'asc') sorted.reverse();
  let start = 0;
  let end = sorted.length;
  if (params.after !== undefined) {
    const at = sorted.findIndex((row) => id(row) === params.after);
    start = at < 0 ? sorted.length : at + 1;
  }
  if (params.before !== undefined) {
    const at = sorted.findIndex((row) => id(row) === params.before);
    end = at < 0 ? 0 : at;
  }
  const limit = params.limit ?? 20;
  const slice = sorted.slice(start, Math.max(start, end));
  // `before` alone asks for the previous page: the `limit` rows just before the cursor (it gave the list's first page),
  // with `has_more` saying whether more lie before them.
  const backwards = params.before !== undefined && params.after === undefined;
  const data = (backwards ? slice.slice(-limit) : slice.slice(0, limit)).map(view);
  return {
    object: 'list',
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: slice.length > limit,
  };
}
