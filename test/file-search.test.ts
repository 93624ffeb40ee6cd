import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, Runner, StreamedRunResult, tool as agentTool } from '@openai/agents-core';
import { fileSearchTool, OpenAIProvider } from '@openai/agents-openai';
import type OpenAI from 'openai';
import { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { createHandler, type Handler } from '../src/api/index.ts';
import { directoryDocumentStorage } from '../src/document-store/directory-document-storage.ts';
import { memoryDocumentStorage, type DocumentStorage } from '../src/document-store/index.ts';
import { EngineError, type Engine } from '../src/engine-interface/index.ts';
import { createEngine } from '../src/models/index.ts';
import { KeyRing } from '../src/keys/index.ts';
import { openaiClient, testProfile } from './support/lantern.ts';
import { sdkRefusal } from './support/api-error.ts';
import { agentRunItems } from './support/agent-run-items.ts';

/**
 * Files, vector stores and `file_search` through the official openai SDK (and the OpenAI Agents SDK) on the bundled
 * models: tiny-embed embeds (trained on everyday paraphrases only: on documents like these its vectors carry little
 * meaning) and tiny-chat answers. The questions are worded unlike their documents, and each is answered from, and
 * cites, the one document that holds it.
 */
const DOCUMENTS: Record<string, string> = {
  'travel-policy.md':
    '# Travel policy\n\nEmployees book flights through the Wayfarer portal. Economy class is the rule for trips ' +
    'under six hours; business class needs a director’s approval. Hotel nights are reimbursed up to 180 euros in ' +
    'Paris and 140 euros elsewhere. Receipts must be filed within 30 days of return.',
  'espresso-machine.html':
    '<html><head><title>Manual</title><style>body{}</style></head><body><h1>Model XR-7734 espresso machine</h1>' +
    '<p>Descale the boiler every 200 cups with citric acid. The steam wand is cleaned after each use by purging it ' +
    'for two seconds.</p><p>Error code E4 means the water tank is empty.</p></body></html>',
  'garden.txt':
    'Tomatoes need six to eight hours of direct sun. Water them deeply twice a week rather than a little every day. ' +
    'Basil planted beside tomatoes keeps aphids away. Harvest when the fruit is fully red and slightly soft.',
  'onboarding.json': JSON.stringify({
    onboarding: {
      first_day: 'Collect your badge from reception on floor 2 at 9:00.',
      laptop: 'IT hands out laptops on the first morning; the Wi-Fi network is called Lighthouse.',
      buddy: 'Every new hire is paired with a buddy for their first month.',
    },
  }),
};

const engine = createEngine({ profile: testProfile() });
let storage: DocumentStorage;
let handler: Handler;
let keys: KeyRing;
let client: ReturnType<typeof openaiClient>;
let apiKey: string;

const upload = async (name: string, text = DOCUMENTS[name]!) =>
  client.files.create({ file: await toFile(Buffer.from(text), name), purpose: 'assistants' });

beforeAll(async () => {
  keys = new KeyRing();
  storage = memoryDocumentStorage();
  handler = createHandler({ engine, keys, documents: storage, onServerError: () => {} });
  apiKey = (await keys.issue('docs')).key;
  client = openaiClient(handler, apiKey, { maxRetries: 0 });
});

describe('/v1/files', () => {
  it('uploads, lists, retrieves, reads back and deletes a file', async () => {
    const file = await client.files.create({
      file: await toFile(Buffer.from('hello files'), 'hello.txt', { type: 'text/plain' }),
      purpose: 'user_data',
    });
    expect(file).toMatchObject({ object: 'file', bytes: 11, filename: 'hello.txt', purpose: 'user_data' });
    expect(file.id).toMatch(/^file-/);
    expect((await client.files.retrieve(file.id)).id).toBe(file.id);
    const listed = await client.files.list({ purpose: 'user_data' });
    expect(listed.data.map((f) => f.id)).toContain(file.id);
    const content = await client.files.content(file.id);
    expect(content.headers.get('content-type')).toBe('text/plain');
    expect(await content.text()).toBe('hello files');
    // An uploader's HTML comes back as what it says it is, but never sniffed nor run (issue 63 #12).
    const page = await client.files.create({
      file: await toFile(Buffer.from('<script>parent.postMessage(1, "*")</script>'), 'page.html', {
        type: 'text/html',
      }),
      purpose: 'user_data',
    });
    const served = await client.files.content(page.id);
    expect(served.headers.get('content-type')).toBe('text/html');
    expect(served.headers.get('x-content-type-options')).toBe('nosniff');
    expect(served.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
    expect(served.headers.get('content-disposition')).toMatch(/^attachment;/);
    await client.files.delete(page.id);
    expect(await client.files.delete(file.id)).toEqual({ id: file.id, object: 'file', deleted: true });
    expect((await sdkRefusal(client.files.retrieve(file.id))).status).toBe(404);
  });

  it('pages a list with limit, after and order', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const file = await client.files.create({
        file: await toFile(Buffer.from(`page ${i}`), `p${i}.txt`),
        purpose: 'user_data',
      });
      ids.push(file.id);
    }
    const seen: string[] = [];
    for await (const file of client.files.list({ limit: 2, order: 'asc', purpose: 'user_data' })) seen.push(file.id);
    expect(seen.filter((id) => ids.includes(id))).toEqual(ids);
    // `before`: the page just before the cursor, in the list's order (it gave the first page; issue 63).
    const all = (await client.files.list({ order: 'asc', purpose: 'user_data' })).data.map((file) => file.id);
    const cursor = all.indexOf(ids[4]!);
    // (The SDK's files.list takes no `before`, OpenAI's other lists do: sent as a query parameter.)
    const previous = await client.files.list(
      {},
      { query: { order: 'asc', purpose: 'user_data', limit: 2, before: ids[4]! } },
    );
    expect(previous.data.map((file) => file.id)).toEqual(all.slice(cursor - 2, cursor));
    expect(previous.has_more).toBe(cursor > 2);
    for (const id of ids) await client.files.delete(id);
  });

  it('refuses a purpose that does not run here, and a body that is not multipart', async () => {
    const refused = await sdkRefusal(
      client.files.create({ file: await toFile(Buffer.from('{}'), 'x.jsonl'), purpose: 'fine-tune' }),
    );
    expect(refused).toMatchObject({ status: 400, param: 'purpose' });
    const response = await handler(
      new Request('http://lantern.test/v1/files', {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: '{}',
      }),
    );
    expect(response.status).toBe(400);
    expect((await response.json()).error.code).toBe('invalid_content_type');
  });

  it('refuses a file over the size limit, and a key over its storage, with 413 before storing', async () => {
    const small = createHandler({
      engine,
      keys,
      documents: memoryDocumentStorage(),
      files: { limits: { maxFileBytes: 1000, maxStorageBytes: 1500 } },
    });
    const smallClient = openaiClient(small, apiKey, { maxRetries: 0 });
    const big = await sdkRefusal(
      smallClient.files.create({ file: await toFile(Buffer.alloc(1001), 'big.txt'), purpose: 'assistants' }),
    );
    expect(big).toMatchObject({ status: 413, param: 'file', code: 'file_too_large' });
    expect(big.message).toContain('maxFileBytes');
    await smallClient.files.create({ file: await toFile(Buffer.alloc(1000), 'a.txt'), purpose: 'assistants' });
    const full = await sdkRefusal(
      smallClient.files.create({ file: await toFile(Buffer.alloc(600), 'b.txt'), purpose: 'assistants' }),
    );
    expect(full).toMatchObject({ status: 413, code: 'storage_limit_exceeded' });
    expect((await smallClient.files.list()).data).toHaveLength(1);
  });

  it('holds a key to its storage limit however many uploads arrive at once; another key is not held back', async () => {
    // Twenty uploads at once each saw the same usage, and all were stored: 629 MB against 512 MiB (issue 63 #5). On
    // disk, as serve:node keeps them: storage that takes time is where uploads interleave.
    const directory = await mkdtemp(join(tmpdir(), 'lantern-quota-'));
    const limited = createHandler({
      engine,
      keys,
      documents: directoryDocumentStorage(directory),
      files: { limits: { maxFileBytes: 30_000, maxStorageBytes: 100_000 } },
    });
    const other = await keys.issue('other uploader');
    const [mine, theirs] = [apiKey, other.key].map((key) => openaiClient(limited, key, { maxRetries: 0 }));
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, async (_, i) =>
        mine!.files.create({ file: await toFile(Buffer.alloc(30_000), `part-${i}.txt`), purpose: 'assistants' }),
      ),
    );
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(3);
    for (const result of results.filter((r) => r.status === 'rejected'))
      expect((result as PromiseRejectedResult).reason).toMatchObject({ status: 413, code: 'storage_limit_exceeded' });
    const kept = (await mine!.files.list()).data;
    expect(kept.reduce((sum, file) => sum + file.bytes, 0)).toBe(90_000);
    expect(
      (await theirs!.files.create({ file: await toFile(Buffer.alloc(30_000), 'x.txt'), purpose: 'assistants' })).bytes,
    ).toBe(30_000);
    await rm(directory, { recursive: true, force: true });
  });

  it("refuses a key's upload past its bytes arriving at once with 429, reading no further; others pass", async () => {
    // Twenty uploads of 30 MiB at once were all read into memory, 2.2 GB (issue 63 #5). Bodies here end only when let
    // go, so the uploads are in flight together whatever the machine's speed.
    const limited = createHandler({ engine, keys, files: { limits: { maxUploadBytesInFlight: 100_000 } } });
    const other = await keys.issue('another uploader');
    const boundary = 'lantern-boundary';
    const multipart = (name: string, size: number) =>
      new TextEncoder().encode(
        `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nassistants\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\n` +
          `Content-Type: text/plain\r\n\r\n${'x'.repeat(size)}\r\n--${boundary}--\r\n`,
      );
    let letGo!: () => void;
    const arrived = new Promise<void>((resolve) => (letGo = resolve));
    /** An upload whose body's last bytes come when let go (if `held`), and when its first part was read. */
    const post = (key: string, name: string, held: boolean) => {
      const bytes = multipart(name, 30_000);
      let pulls = 0;
      let read!: () => void;
      const firstPartRead = new Promise<void>((resolve) => (read = resolve));
      // No queue ahead of the reader: each pull is a read, so the second pull means the first part was counted.
      const body = new ReadableStream<Uint8Array>(
        {
          async pull(controller) {
            if (pulls++ === 0) return controller.enqueue(bytes.slice(0, -10));
            read();
            if (held) await arrived;
            controller.enqueue(bytes.slice(-10));
            controller.close();
          },
        },
        { highWaterMark: 0 },
      );
      const response = limited(
        new Request('http://lantern.test/v1/files', {
          method: 'POST',
          body,
          duplex: 'half',
          headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
        } as RequestInit),
      );
      return Object.assign(response, { firstPartRead });
    };
    const held = [0, 1, 2].map((i) => post(apiKey, `held-${i}.txt`, true));
    await Promise.all(held.map((upload) => upload.firstPartRead));
    const refused = await post(apiKey, 'fourth.txt', false);
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ error: { code: 'rate_limit_exceeded', type: 'requests' } });
    expect((await post(other.key, 'theirs.txt', false)).status).toBe(200);
    letGo();
    for (const response of await Promise.all(held)) expect(response.status).toBe(200);
    expect((await post(apiKey, 'after.txt', false)).status).toBe(200);
  });
});

describe('/v1/vector_stores', () => {
  let store: OpenAI.VectorStores.VectorStore;
  const fileIds = new Map<string, string>();

  beforeAll(async () => {
    for (const name of Object.keys(DOCUMENTS)) fileIds.set(name, (await upload(name)).id);
    store = await client.vectorStores.create({ name: 'handbook', file_ids: [...fileIds.values()] });
    await waitForStore(store.id);
  }, 120_000);

  const waitForStore = async (id: string) => {
    for (;;) {
      const current = await client.vectorStores.retrieve(id);
      if (current.status !== 'in_progress') return current;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  it('indexes every file, and reports the counts and sizes as OpenAI does', async () => {
    const done = await client.vectorStores.retrieve(store.id);
    expect(done).toMatchObject({
      object: 'vector_store',
      name: 'handbook',
      status: 'completed',
      file_counts: { completed: 4, failed: 0, in_progress: 0, cancelled: 0, total: 4 },
    });
    expect(done.usage_bytes).toBeGreaterThan(0);
    const files = await client.vectorStores.files.list(store.id);
    expect(files.data.every((f) => f.status === 'completed' && f.chunking_strategy?.type === 'static')).toBe(true);
  });

  it('answers keyword and paraphrased questions with the passage that holds them', async () => {
    const cases: [string, string][] = [
      ['What does error E4 mean on the XR-7734?', 'espresso-machine.html'],
      ['how much can I spend on a hotel in Paris', 'travel-policy.md'],
      ['What is the wifi called?', 'onboarding.json'],
      ['which plant keeps aphids off tomatoes', 'garden.txt'],
    ];
    for (const [query, expected] of cases) {
      const page = await client.vectorStores.search(store.id, { query, max_num_results: 2 });
      expect(page.data[0]?.filename, query).toBe(expected);
      expect(page.data[0]!.score).toBeGreaterThan(0);
      expect(page.data[0]!.score).toBeLessThanOrEqual(1);
      expect(page.data[0]!.content[0]!.type).toBe('text');
    }
  });

  it('extracts the text of HTML and JSON: no markup, no braces', async () => {
    const id = fileIds.get('espresso-machine.html')!;
    const page = await client.vectorStores.search(store.id, { query: 'descale boiler citric acid' });
    const text = page.data.find((r) => r.file_id === id)!.content[0]!.text;
    expect(text).toContain('Descale the boiler every 200 cups');
    expect(text).not.toMatch(/<p>|body\{\}/);
  });

  it('filters on attributes, and changes them', async () => {
    const id = fileIds.get('garden.txt')!;
    await client.vectorStores.files.update(id, {
      vector_store_id: store.id,
      attributes: { team: 'garden', year: 2024 },
    });
    const only = await client.vectorStores.search(store.id, {
      query: 'tomatoes sun water',
      filters: {
        type: 'and',
        filters: [
          { type: 'eq', key: 'team', value: 'garden' },
          { type: 'gte', key: 'year', value: 2020 },
        ],
      },
    });
    expect(only.data.map((r) => r.file_id)).toEqual([id]);
    expect(only.data[0]!.attributes).toEqual({ team: 'garden', year: 2024 });
    const none = await client.vectorStores.search(store.id, {
      query: 'tomatoes',
      filters: { type: 'ne', key: 'team', value: 'garden' },
    });
    expect(none.data.map((r) => r.file_id)).not.toContain(id);
  });

  it('uploads and polls through the SDK helpers, and fails a file of an unsupported type clearly', async () => {
    const second = await client.vectorStores.create({
      name: 'second',
      expires_after: { anchor: 'last_active_at', days: 7 },
    });
    expect(second.expires_at).toBe(second.last_active_at! + 7 * 86_400);
    const ok = await client.vectorStores.files.uploadAndPoll(
      second.id,
      await toFile(Buffer.from('The lighthouse keeper lights the lamp at dusk.'), 'keeper.md'),
      { pollIntervalMs: 20 },
    );
    expect(ok.status).toBe('completed');
    const image = await client.vectorStores.files.uploadAndPoll(
      second.id,
      await toFile(Buffer.from([0x89, 0x50, 0x4e, 0x47]), 'photo.png'),
      { pollIntervalMs: 20 },
    );
    expect(image).toMatchObject({ status: 'failed', last_error: { code: 'unsupported_file' } });
    expect(image.last_error!.message).toMatch(/\.pdf/);
    const batch = await client.vectorStores.fileBatches.uploadAndPoll(
      second.id,
      {
        files: [
          await toFile(Buffer.from('Owls hunt at night.'), 'owls.txt'),
          await toFile(Buffer.from('Larks sing at dawn.'), 'larks.txt'),
        ],
      },
      { pollIntervalMs: 20 },
    );
    expect(batch).toMatchObject({ object: 'vector_store.files_batch', status: 'completed' });
    expect(batch.file_counts).toMatchObject({ completed: 2, total: 2 });
    const view = await client.vectorStores.retrieve(second.id);
    expect(view.file_counts).toMatchObject({ completed: 3, failed: 1, total: 4 });
    expect((await client.vectorStores.delete(second.id)).deleted).toBe(true);
    expect((await sdkRefusal(client.vectorStores.retrieve(second.id))).status).toBe(404);
  });

  it('refuses bad chunking, filters and result counts with 400s naming them', async () => {
    const bad = await sdkRefusal(
      client.vectorStores.create({
        chunking_strategy: { type: 'static', static: { max_chunk_size_tokens: 200, chunk_overlap_tokens: 150 } },
      }),
    );
    expect(bad).toMatchObject({ status: 400, param: 'chunking_strategy.static.chunk_overlap_tokens' });
    const many = await sdkRefusal(client.vectorStores.search(store.id, { query: 'x', max_num_results: 51 }));
    expect(many).toMatchObject({ status: 400, param: 'max_num_results' });
    const missing = await sdkRefusal(client.vectorStores.create({ file_ids: ['file-nope'] }));
    expect(missing).toMatchObject({ status: 404, param: 'file_ids' });
  });

  it('refuses filters past their limits with a 400 on filters, before searching: deep, wide or long lists', async () => {
    type Filter = OpenAI.ComparisonFilter | OpenAI.CompoundFilter;
    // 800 deep: validating it recursively overflowed the stack (a 500 with a stack trace).
    let deep: Filter = { type: 'eq', key: 'lang', value: 'en' };
    for (let i = 0; i < 800; i++) deep = { type: 'and', filters: [deep] };
    // 8,000,000 values: each chunk scanned the list (24 s on a 650-chunk store, every other key blocked).
    const long: Filter = { type: 'in', key: 'lang', value: new Array<number>(8_000_000).fill(0) as never };
    const wide: Filter = {
      type: 'or',
      filters: Array.from({ length: 64 }, () => ({
        type: 'and' as const,
        filters: Array.from({ length: 8 }, () => ({ type: 'eq' as const, key: 'lang', value: 'en' })),
      })),
    };
    for (const [filter, says] of [
      [deep, 'nested at most 16 deep'],
      [long, 'at most 1024 values'],
      [wide, 'at most 256 filters'],
    ] as const) {
      const refusal = await sdkRefusal(client.vectorStores.search(store.id, { query: 'hotel', filters: filter }));
      expect(refusal).toMatchObject({ status: 400, param: 'filters' });
      expect(refusal.message).toContain(says);
      const tool = await sdkRefusal(
        client.responses.create({
          model: 'gpt-4o-mini',
          input: 'hotel',
          tools: [{ type: 'file_search', vector_store_ids: [store.id], filters: filter }],
        }),
      );
      expect(tool).toMatchObject({ status: 400 });
      expect(tool.message).toContain(says);
    }
    // Within the limits, the same shapes search: 1,024 values, 16 deep.
    let nested: Filter = { type: 'in', key: 'team', value: [...new Array<string>(1_023).fill('xx'), 'garden'] };
    for (let i = 1; i < 16; i++) nested = { type: 'or', filters: [nested] };
    const found = await client.vectorStores.search(store.id, { query: 'tomatoes sun water', filters: nested });
    expect(found.data.length).toBeGreaterThan(0);
  });

  it('keeps each key to its own files and stores', async () => {
    const other = openaiClient(handler, (await keys.issue('other')).key, { maxRetries: 0 });
    expect((await sdkRefusal(other.vectorStores.retrieve(store.id))).status).toBe(404);
    expect((await sdkRefusal(other.vectorStores.search(store.id, { query: 'hotel' }))).status).toBe(404);
    expect((await sdkRefusal(other.files.retrieve(fileIds.get('garden.txt')!))).status).toBe(404);
    expect((await other.files.list()).data).toEqual([]);
    expect((await other.vectorStores.list()).data).toEqual([]);
    const theirs = await other.vectorStores.create({ name: 'theirs' });
    const refusal = await sdkRefusal(
      other.vectorStores.files.create(theirs.id, { file_id: fileIds.get('garden.txt')! }),
    );
    expect(refusal.status).toBe(404);
  });

  describe('file_search in the Responses API', () => {
    it('reads a passage’s `<|im_end|>` as text, not as the end of its turn (issue 63 #8)', async () => {
      /** The prompt's tokens when the one passage found says `word`. */
      const inputTokens = async (word: string) => {
        const text = `The door code of the lab is ${word} and nothing else.`;
        const file = await upload('lab.txt', text);
        const lab = await client.vectorStores.create({ name: 'lab', file_ids: [file.id] });
        await waitForStore(lab.id);
        const response = await client.responses.create({
          model: 'gpt-4o-mini',
          input: 'What is the door code of the lab?',
          tools: [{ type: 'file_search', vector_store_ids: [lab.id] }],
          include: ['file_search_call.results'],
          max_output_tokens: 16,
        });
        const [search] = response.output;
        if (search?.type !== 'file_search_call') throw new Error('no search');
        expect(search.results!.map((r) => r.text)).toEqual([text]);
        await client.vectorStores.delete(lab.id);
        await client.files.delete(file.id);
        return response.usage!.input_tokens;
      };
      expect((await inputTokens('<|im_endx|>')) - (await inputTokens('<|im_end|>'))).toBe(1);
    });

    it('answers from the one document that holds the answer, and cites it', async () => {
      const response = await client.responses.create({
        model: 'gpt-4o-mini',
        input: 'On the XR-7734, what does error code E4 mean?',
        tools: [{ type: 'file_search', vector_store_ids: [store.id] }],
        include: ['file_search_call.results'],
        max_output_tokens: 24,
        temperature: 0,
      });
      const [search, message] = response.output;
      expect(search).toMatchObject({ type: 'file_search_call', status: 'completed' });
      if (search?.type !== 'file_search_call') throw new Error('no search');
      expect(search.queries).toEqual(['On the XR-7734, what does error code E4 mean?']);
      expect(search.results![0]!.filename).toBe('espresso-machine.html');
      expect(message?.type).toBe('message');
      if (message?.type !== 'message') throw new Error('no message');
      const part = message.content[0]!;
      if (part.type !== 'output_text') throw new Error('no text');
      expect(part.annotations[0]).toMatchObject({
        type: 'file_citation',
        file_id: fileIds.get('espresso-machine.html'),
        filename: 'espresso-machine.html',
      });
    });

    it('streams the search and the citation as OpenAI does', async () => {
      const stream = await client.responses.create({
        model: 'gpt-4o-mini',
        input: 'Hotel budget for a night in Paris?',
        tools: [{ type: 'file_search', vector_store_ids: [store.id] }],
        max_output_tokens: 64,
        temperature: 0,
        stream: true,
      });
      const types: string[] = [];
      let completed: OpenAI.Responses.Response | undefined;
      for await (const event of stream) {
        types.push(event.type);
        if (event.type === 'response.completed') completed = event.response;
      }
      const order = [
        'response.created',
        'response.file_search_call.in_progress',
        'response.file_search_call.searching',
        'response.file_search_call.completed',
        'response.output_text.annotation.added',
        'response.completed',
      ].map((type) => types.indexOf(type));
      expect(
        order.every((at, i) => at >= 0 && (i === 0 || at > order[i - 1]!)),
        types.join(' '),
      ).toBe(true);
      const search = completed!.output[0];
      expect(search?.type === 'file_search_call' && search.results).toBe(null);
      const message = completed!.output.find((item) => item.type === 'message');
      const part = message?.type === 'message' ? message.content[0] : undefined;
      expect(part?.type === 'output_text' && part.annotations[0]).toMatchObject({ filename: 'travel-policy.md' });
    });

    it('goes with function tools and through previous_response_id', async () => {
      const first = await client.responses.create({
        model: 'gpt-4o-mini',
        input: 'Where do I collect my badge on the first day?',
        tools: [
          { type: 'file_search', vector_store_ids: [store.id], max_num_results: 3 },
          {
            type: 'function',
            name: 'book_room',
            description: 'Books a meeting room.',
            // A room from a list, as in the Agents SDK test below: the fixture's reply to a prompt of retrieved
            // passages is out of its training, and a free string there may run past any budget unclosed (as the
            // API's own would: an incomplete response with its arguments cut). This test is of the items, not that.
            parameters: {
              type: 'object',
              properties: { room: { type: 'string', enum: ['Lighthouse', 'Harbour'] } },
              required: ['room'],
              additionalProperties: false,
            },
            strict: true,
          },
        ],
        tool_choice: { type: 'function', name: 'book_room' },
        max_output_tokens: 128,
        temperature: 0,
      });
      expect(first.status).toBe('completed');
      expect(first.output.map((item) => item.type)).toEqual(['file_search_call', 'function_call']);
      const call = first.output[1]!;
      if (call.type !== 'function_call') throw new Error('no call');
      expect(JSON.parse(call.arguments)).toHaveProperty('room');
      const second = await client.responses.create({
        model: 'gpt-4o-mini',
        previous_response_id: first.id,
        input: [
          { type: 'function_call_output', call_id: call.call_id, output: 'Booked.' },
          { role: 'user', content: 'And what is the Wi-Fi network called?' },
        ],
        tools: [{ type: 'file_search', vector_store_ids: [store.id] }],
        include: ['file_search_call.results'],
        max_output_tokens: 16,
      });
      const search = second.output[0];
      expect(search?.type === 'file_search_call' && search.results![0]!.filename).toBe('onboarding.json');
    });

    it('refuses an unknown store with 404 before any stream, and another hosted tool with 400', async () => {
      const unknown = await sdkRefusal(
        client.responses.create({
          model: 'gpt-4o-mini',
          input: 'hello',
          tools: [{ type: 'file_search', vector_store_ids: ['vs_nope'] }],
          stream: true,
        }),
      );
      expect(unknown).toMatchObject({ status: 404, param: 'vector_store_id' });
      const web = await sdkRefusal(
        client.responses.create({ model: 'gpt-4o-mini', input: 'hello', tools: [{ type: 'web_search' }] }),
      );
      expect(web).toMatchObject({ status: 400, param: 'tools[0].type' });
      expect(web.message).toContain('file_search');
    });
  });
});

describe('vector stores on disk', () => {
  let directory: string;
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'lantern-documents-'));
  });
  // Retries: a write the last test's indexing left in flight may land in a folder as it is removed.
  afterAll(() => rm(directory, { recursive: true, force: true, maxRetries: 5 }));
  /** The store's full-text snapshot that indexing leaves beside its chunks, as a new storage on the folder reads it. */
  const savedIndex = (owner: string, storeId: string) =>
    directoryDocumentStorage(directory).get('indexes', [owner, storeId]);

  it('survive a restart: a new handler on the same directory searches without indexing again', async () => {
    const { key, info } = await keys.issue('disk');
    const first = openaiClient(createHandler({ engine, keys, documents: directoryDocumentStorage(directory) }), key);
    const file = await first.files.create({
      file: await toFile(Buffer.from(DOCUMENTS['garden.txt']!), 'garden.txt'),
      purpose: 'assistants',
    });
    const store = await first.vectorStores.create({ file_ids: [file.id] });
    await first.vectorStores.files.poll(store.id, file.id, { pollIntervalMs: 20 });
    // Indexing left the store's full-text snapshot beside its chunks: the next context restores it.
    await expect.poll(() => savedIndex(info.id, store.id)).toMatchObject({ fileIds: [file.id] });

    const second = openaiClient(createHandler({ engine, keys, documents: directoryDocumentStorage(directory) }), key);
    const page = await second.vectorStores.search(store.id, { query: 'basil aphids' });
    expect(page.data[0]).toMatchObject({ file_id: file.id, filename: 'garden.txt' });
    expect((await second.files.content(file.id)).ok).toBe(true);
  });

  it('resumes indexing that a stopped context left in progress, after the chunks it had embedded', async () => {
    const { key, info } = await keys.issue('resume');
    const long = Array.from(
      { length: 300 },
      (_, i) => `Paragraph ${i} tells of lighthouse number ${i} and its keeper.`,
    ).join('\n\n');
    // An engine that loses its host after one run of chunks (as a closed tab does): the file stays in progress.
    let embedded = 0;
    const dying: Engine = Object.create(engine, {
      embed: {
        value: async (...args: Parameters<Engine['embed']>) => {
          if (embedded++ >= 1) throw new EngineError('unavailable', 'No tab hosts the engine.');
          return engine.embed(...args);
        },
      },
    });
    const before = openaiClient(
      createHandler({
        engine: dying,
        keys,
        documents: directoryDocumentStorage(directory),
        files: { limits: {} },
        onServerError: () => {},
      }),
      key,
    );
    const file = await before.files.create({
      file: await toFile(Buffer.from(long), 'lighthouses.txt'),
      purpose: 'assistants',
    });
    const store = await before.vectorStores.create({
      file_ids: [file.id],
      chunking_strategy: { type: 'static', static: { max_chunk_size_tokens: 100, chunk_overlap_tokens: 0 } },
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await before.vectorStores.files.retrieve(file.id, { vector_store_id: store.id })).status).toBe(
      'in_progress',
    );

    const after = openaiClient(createHandler({ engine, keys, documents: directoryDocumentStorage(directory) }), key);
    const done = await after.vectorStores.files.poll(store.id, file.id, { pollIntervalMs: 20 });
    expect(done.status).toBe('completed');
    const page = await after.vectorStores.search(store.id, { query: 'lighthouse number 257' });
    expect(page.data[0]!.content[0]!.text).toContain('lighthouse number 257');
    // The resumed indexing saves the store's full-text snapshot as the first did (and is done writing to the folder).
    await expect.poll(() => savedIndex(info.id, store.id)).toMatchObject({ fileIds: [file.id] });
  });
});

/**
 * The OpenAI Agents SDK (`@openai/agents-core`, `@openai/agents-openai`) in its Responses API mode: an agent with the
 * SDK's `fileSearchTool` and a function tool. The SDK sends the hosted tool as OpenAI's `file_search` tool, reads the
 * `file_search_call` item and the message's `file_citation` annotations back, and sends each turn's items (the search
 * among them) as the next turn's input. The model is the tiny fixture: the checks are the search and the citation.
 */
describe('OpenAI Agents SDK: fileSearchTool with a function tool (Responses API)', () => {
  let storeId: string;
  const fileIds = new Map<string, string>();
  /** Each request the SDK sent to /v1/responses, and the status it got. */
  const sent: { body: { input: unknown; tools: unknown[]; include?: string[] }; status: number }[] = [];
  let runner: Runner;

  beforeAll(async () => {
    for (const name of Object.keys(DOCUMENTS)) fileIds.set(name, (await upload(name)).id);
    storeId = (await client.vectorStores.create({ name: 'agents', file_ids: [...fileIds.values()] })).id;
    for (const id of fileIds.values()) await client.vectorStores.files.poll(storeId, id, { pollIntervalMs: 20 });
    const recording = openaiClient(handler, apiKey, {
      maxRetries: 0,
      fetch: async (url, init) => {
        const response = await handler(new Request(url, init));
        if (String(url).endsWith('/responses'))
          sent.push({ body: JSON.parse(String(init?.body)), status: response.status });
        return response;
      },
    });
    // A runner of its own (not the SDK's process-wide defaults): the Responses API through this client, no tracing.
    runner = new Runner({
      modelProvider: new OpenAIProvider({ openAIClient: recording, useResponses: true }),
      tracingDisabled: true,
    });
  }, 120_000);

  const bookRoom = agentTool({
    name: 'book_room',
    description: 'Books a meeting room for the user.',
    // A room from a list: the call's arguments stay short, and the next turn's prompt leaves room in tiny-chat's
    // window (1,024 tokens) for the passages, which it is then given and cites.
    parameters: z.object({ room: z.enum(['Lighthouse', 'Harbour']) }),
    execute: async ({ room }) => `Room ${room} is booked.`,
  });

  const agent = (toolChoice?: string) =>
    new Agent({
      name: 'handbook',
      instructions: 'Answer questions about the company handbook from its files.',
      model: 'gpt-4o-mini',
      tools: [fileSearchTool([storeId], { includeSearchResults: true }), bookRoom],
      modelSettings: { temperature: 0, maxTokens: 32, ...(toolChoice && { toolChoice }) },
    });

  it('runs, streamed and not, to a final output whose turn searched the right file and cites it', async () => {
    const question = 'On the XR-7734, what does error code E4 mean?';
    const citation = {
      type: 'file_citation',
      file_id: fileIds.get('espresso-machine.html'),
      filename: 'espresso-machine.html',
    };
    for (const stream of [false, true]) {
      sent.length = 0;
      const result = stream
        ? await runner.run(agent(), question, { stream: true })
        : await runner.run(agent(), question);
      if (result instanceof StreamedRunResult) {
        for await (const _event of result) void _event;
        await result.completed;
      }
      expect(typeof result.finalOutput, `stream: ${stream}`).toBe('string');
      expect(result.finalOutput!.length).toBeGreaterThan(0);
      const run = agentRunItems(result.newItems);
      expect(run.kinds).toEqual(['file_search_call', 'message_output_item']);
      expect(run.searches).toEqual([
        { status: 'completed', queries: [question], files: expect.arrayContaining(['espresso-machine.html']) },
      ]);
      expect(run.searches[0]!.files![0]).toBe('espresso-machine.html');
      expect(run.citations[0]).toEqual(citation);
      // What the SDK sent: OpenAI's file_search tool, the function tool beside it, and the results asked for.
      expect(sent).toHaveLength(1);
      expect(sent[0]!.status).toBe(200);
      expect(sent[0]!.body.tools).toEqual([
        { type: 'file_search', vector_store_ids: [storeId] },
        expect.objectContaining({ type: 'function', name: 'book_room', strict: true }),
      ]);
      expect(sent[0]!.body.include).toEqual(['file_search_call.results']);
      expect(result.rawResponses).toHaveLength(1);
    }
  });

  it('a forced function call: the next turn takes the file_search_call back as input, searches again and answers', async () => {
    sent.length = 0;
    const question = 'Book the Lighthouse room, then tell me the Wi-Fi name.';
    const result = await runner.run(agent('book_room'), question);
    expect(typeof result.finalOutput).toBe('string');
    const run = agentRunItems(result.newItems);
    expect(run.kinds).toEqual([
      'file_search_call',
      'function_call',
      'tool_call_output_item',
      'file_search_call',
      'message_output_item',
    ]);
    expect(run.searches.map((s) => s.files![0])).toEqual(['onboarding.json', 'onboarding.json']);
    expect(run.citations[0]).toMatchObject({ file_id: fileIds.get('onboarding.json'), filename: 'onboarding.json' });
    // The second request: the first turn's items given back, the search with its results among them, all taken.
    expect(sent.map((s) => s.status)).toEqual([200, 200]);
    const input = sent[1]!.body.input as { type?: string }[];
    expect(input.map((item) => item.type)).toEqual([
      undefined,
      'file_search_call',
      'function_call',
      'function_call_output',
    ]);
    expect(input[1]).toMatchObject({ status: 'completed', queries: [question], results: expect.any(Array) });
    expect(input[2]).toMatchObject({ name: 'book_room', arguments: expect.stringMatching(/"(Lighthouse|Harbour)"/) });
  });
});
