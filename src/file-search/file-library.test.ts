import { describe, expect, it } from 'vitest';
import { EngineError } from '../engine-interface/index.ts';
import { memoryDocumentStorage, type DocumentStorage } from '../document-store/index.ts';
import { FakeEngine } from '../../test/support/fake-engine.ts';
import { UnreadableFileError, extractText } from '../documents/index.ts';
import { FileLibrary, type TextExtractor } from './file-library.ts';
import { LibraryError } from './library-error.ts';

/**
 * The library's own rules, on a fake engine (its embeddings are word counts: enough for the index, which the hybrid
 * index's tests cover). test/file-search.test.ts runs the API through the openai SDK on the real bundled models.
 */
const bytes = (text: string) => new TextEncoder().encode(text);

/** Embeddings that count a few words, so that the vectors mean something to the index. */
function wordEngine(): FakeEngine {
  const engine = new FakeEngine();
  const words = ['hotel', 'tomato', 'boiler', 'badge', 'lamp', 'owl'];
  engine.onEmbed = async (request) => ({
    embeddings: request.input.map((text) =>
      Float32Array.from([...words.map((w) => (text.toLowerCase().includes(w) ? 1 : 0)), 0.01]),
    ),
    usage: { promptTokens: request.input.length },
  });
  return engine;
}

function library(options: { storage?: DocumentStorage; engine?: FakeEngine; now?: () => number } = {}) {
  return new FileLibrary({
    storage: options.storage ?? memoryDocumentStorage(),
    engine: options.engine ?? wordEngine(),
    ...(options.now && { now: options.now }),
  });
}

const upload = (lib: FileLibrary, owner: string, name: string, text: string) =>
  lib.createFile(owner, { bytes: bytes(text), filename: name, mimeType: 'text/plain', purpose: 'assistants' });

describe('FileLibrary', () => {
  it('refuses an upload the origin has no room for (QuotaExceededError) with 413 storage_full, keeping nothing', async () => {
    const storage = memoryDocumentStorage();
    const full: DocumentStorage = {
      ...storage,
      put: async (table, key, value) => {
        if (table === 'files') throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
        return storage.put(table, key, value);
      },
    };
    const lib = library({ storage: full });
    const refusal = await upload(lib, 'k', 'a.txt', 'hello').catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(LibraryError);
    expect(refusal).toMatchObject({ status: 413, code: 'storage_full', param: 'file' });
    expect(await storage.list('file_bytes', ['k'])).toEqual([]);
  });

  it('deletes a file from every store of its key, and its chunks with it', async () => {
    const lib = library();
    const file = await upload(lib, 'k', 'hotel.txt', 'Hotel nights are paid up to 180 euros.');
    const one = await lib.createVectorStore('k', { fileIds: [file.id] });
    const two = await lib.createVectorStore('k', { fileIds: [file.id] });
    await lib.idle();
    await lib.deleteFile('k', file.id);
    for (const store of [one, two]) {
      const view = await lib.retrieveVectorStore('k', store.id);
      expect(view.file_counts.total).toBe(0);
      expect(await lib.search('k', [store.id], { queries: ['hotel'], maxResults: 5 })).toEqual([]);
    }
  });

  it('cancels what of a batch is not indexed, and the batch says cancelled', async () => {
    const engine = wordEngine();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const embed = engine.onEmbed;
    engine.onEmbed = async (request) => (await gate, embed(request));
    const lib = library({ engine });
    const files = await Promise.all(['a', 'b', 'c'].map((n) => upload(lib, 'k', `${n}.txt`, `owl ${n}`)));
    const store = await lib.createVectorStore('k', {});
    const batch = await lib.createBatch(
      'k',
      store.id,
      files.map((f) => ({ fileId: f.id })),
    );
    expect(batch).toMatchObject({ status: 'in_progress', file_counts: { in_progress: 3, total: 3 } });
    const cancelled = await lib.cancelBatch('k', store.id, batch.id);
    release();
    await lib.idle();
    expect(cancelled.status).toBe('cancelled');
    const after = await lib.retrieveBatch('k', store.id, batch.id);
    expect(after).toMatchObject({ status: 'cancelled', file_counts: { cancelled: 3, in_progress: 0 } });
    expect(await lib.search('k', [store.id], { queries: ['owl'], maxResults: 5 })).toEqual([]);
  });

  it('fails a file whose model refuses it for good, and keeps one whose engine is away for later', async () => {
    const engine = wordEngine();
    let failure: EngineError = new EngineError('unavailable', 'No tab hosts the engine.');
    engine.onEmbed = async () => {
      throw failure;
    };
    const storage = memoryDocumentStorage();
    const lib = library({ storage, engine });
    const file = await upload(lib, 'k', 'lamp.txt', 'The lamp is lit at dusk.');
    const store = await lib.createVectorStore('k', { fileIds: [file.id] });
    await lib.idle();
    expect((await lib.retrieveStoreFile('k', store.id, file.id)).status).toBe('in_progress');

    failure = new EngineError('model_not_found', 'No such model.');
    const again = library({ storage, engine });
    await again.idle();
    const failed = await again.retrieveStoreFile('k', store.id, file.id);
    expect(failed).toMatchObject({ status: 'failed', last_error: { code: 'server_error' } });
    expect(failed.last_error!.message).toContain('No such model.');
  });

  it('expires a store after its days without use, and searching it then is refused', async () => {
    let clock = Date.UTC(2026, 0, 1);
    const lib = library({ now: () => clock });
    const store = await lib.createVectorStore('k', { expiresAfter: { anchor: 'last_active_at', days: 2 } });
    clock += 86_400_000;
    await lib.search('k', [store.id], { queries: ['x'], maxResults: 1 }); // use moves the expiry on
    clock += 1.5 * 86_400_000;
    expect((await lib.retrieveVectorStore('k', store.id)).status).toBe('completed');
    clock += 86_400_000;
    expect((await lib.retrieveVectorStore('k', store.id)).status).toBe('expired');
    const refusal = await lib.search('k', [store.id], { queries: ['x'], maxResults: 1 }).catch((e: unknown) => e);
    expect(refusal).toMatchObject({ status: 400, code: 'vector_store_expired' });
  });

  it('forgets a file once its own expiry has passed', async () => {
    let clock = Date.UTC(2026, 0, 1);
    const lib = library({ now: () => clock });
    const file = await lib.createFile('k', {
      bytes: bytes('x'),
      filename: 'x.txt',
      mimeType: 'text/plain',
      purpose: 'user_data',
      expiresAfterS: 3600,
    });
    expect(file.expires_at).toBe(file.created_at + 3600);
    clock += 3601_000;
    expect((await lib.listFiles('k', {})).data).toEqual([]);
    expect(await lib.retrieveFile('k', file.id).catch((e: unknown) => (e as LibraryError).status)).toBe(404);
  });

  it('refuses a file that would take its store over the chunk limit, naming the limit', async () => {
    const lib = new FileLibrary({
      storage: memoryDocumentStorage(),
      engine: wordEngine(),
      limits: { maxChunksPerStore: 3 },
    });
    const long = Array.from({ length: 40 }, (_, i) => `Sentence ${i} is about an owl.`).join(' ');
    const file = await upload(lib, 'k', 'owls.txt', long);
    const store = await lib.createVectorStore('k', {
      fileIds: [file.id],
      chunking: { maxChunkTokens: 100, overlapTokens: 0 },
    });
    await lib.idle();
    const failed = await lib.retrieveStoreFile('k', store.id, file.id);
    expect(failed).toMatchObject({ status: 'failed', last_error: { code: 'invalid_file' } });
    expect(failed.last_error!.message).toContain('maxChunksPerStore');
  });

  it('attaching a file again indexes it anew, with its new attributes', async () => {
    const lib = library();
    const file = await upload(lib, 'k', 'badge.txt', 'Collect your badge at reception.');
    const store = await lib.createVectorStore('k', {});
    await lib.attachFile('k', store.id, file.id, { attributes: { floor: 1 } });
    await lib.idle();
    await lib.attachFile('k', store.id, file.id, { attributes: { floor: 2 } });
    await lib.idle();
    const hits = await lib.search('k', [store.id], { queries: ['badge'], maxResults: 5 });
    expect(hits).toHaveLength(1);
    expect(hits[0]!.attributes).toEqual({ floor: 2 });
    expect((await lib.listStoreFiles('k', store.id, {})).data).toHaveLength(1);
  });

  it("takes keys in turns: a key's small file indexes while another key's eight large ones wait (issue 63)", async () => {
    const engine = wordEngine();
    const embedded: string[] = [];
    const embed = engine.onEmbed;
    // Nothing embeds until every file is attached: the order is then the queue's alone.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    engine.onEmbed = async (request) => (await gate, embedded.push(...request.input), embed(request));
    const lib = library({ engine });
    const long = Array.from({ length: 1000 }, (_, i) => `Sentence ${i} tells of a hotel room and its lamp.`).join(' ');
    const big = await upload(lib, 'a', 'hotels.txt', long);
    const small = await upload(lib, 'b', 'owl.txt', 'The owl hoots at night.');
    const chunking = { maxChunkTokens: 100, overlapTokens: 0 };
    for (let i = 0; i < 8; i++) await lib.createVectorStore('a', { fileIds: [big.id], chunking });
    const store = await lib.createVectorStore('b', { fileIds: [small.id] });
    release();
    await lib.idle();

    expect((await lib.retrieveStoreFile('b', store.id, small.id)).status).toBe('completed');
    // B's chunk was embedded after one turn of A's (64 chunks), not after all of A's eight files (a FIFO queue's order).
    expect((embedded.length - 1) / 8).toBeGreaterThan(64);
    expect(embedded.indexOf('The owl hoots at night.')).toBeLessThanOrEqual(64);
  });

  it('reads a file once for every store and content call, and keeps a failed read as failed (issue 63)', async () => {
    let reads = 0;
    const extract: TextExtractor = async (...args) => (reads++, extractText(...args));
    const lib = new FileLibrary({ storage: memoryDocumentStorage(), engine: wordEngine(), extract });
    const file = await upload(lib, 'k', 'lamp.txt', 'The lamp is lit at dusk.');
    const stores = [];
    for (let i = 0; i < 3; i++) stores.push(await lib.createVectorStore('k', { fileIds: [file.id] }));
    await lib.idle();
    for (const store of stores) {
      expect(await lib.storeFileContent('k', store.id, file.id)).toEqual([
        { type: 'text', text: 'The lamp is lit at dusk.' },
      ]);
    }
    expect(reads).toBe(1);

    const broken = await upload(lib, 'k', 'broken.json', '{"lamp":');
    await lib.attachFile('k', stores[0]!.id, broken.id, {});
    await lib.idle();
    expect(await lib.storeFileContent('k', stores[0]!.id, broken.id)).toEqual([]);
    expect(await lib.storeFileContent('k', stores[0]!.id, broken.id)).toEqual([]);
    expect(reads).toBe(2);
    expect(await lib.retrieveStoreFile('k', stores[0]!.id, broken.id)).toMatchObject({
      status: 'failed',
      last_error: { code: 'invalid_file' },
    });
  });

  it('fails a file whose read a stopped context left unfinished, without reading it again (issue 63)', async () => {
    const storage = memoryDocumentStorage();
    // The first context's read never ends: the process stops (or is killed) while it reads.
    const first = new FileLibrary({ storage, engine: wordEngine(), extract: () => new Promise(() => {}) });
    const file = await upload(first, 'k', 'poison.pdf', '%PDF-1.7 ...');
    const store = await first.createVectorStore('k', { fileIds: [file.id] });
    await expect
      .poll(async () => (await storage.get<{ state: string }>('file_texts', ['k', file.id]))?.state)
      .toBe('extracting');

    let reads = 0;
    const extract: TextExtractor = async () => {
      reads++;
      throw new UnreadableFileError('not reached');
    };
    const next = new FileLibrary({ storage, engine: wordEngine(), extract });
    await next.idle();
    const failed = await next.retrieveStoreFile('k', store.id, file.id);
    expect(failed).toMatchObject({ status: 'failed', last_error: { code: 'invalid_file' } });
    expect(failed.last_error!.message).toContain('did not finish');
    expect(reads).toBe(0);
    // A third context does not read it either: the failure is kept.
    const third = new FileLibrary({ storage, engine: wordEngine(), extract });
    await third.idle();
    expect(await third.storeFileContent('k', store.id, file.id)).toEqual([]);
    expect(reads).toBe(0);
  });
});
