import type OpenAI from 'openai';
import { toFile } from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import { createHandler } from '../src/api/index.ts';
import { memoryDocumentStorage } from '../src/document-store/index.ts';
import type { Engine } from '../src/engine-interface/index.ts';
import { KeyRing } from '../src/keys/index.ts';
import { createEngine } from '../src/models/index.ts';
import { sdkRefusal } from './support/api-error.ts';
import { openaiClient, testProfile } from './support/lantern.ts';
import { overrideTask } from './support/task-override.ts';

/**
 * The Batch API through the official openai SDK on the bundled models: a JSONL file uploaded with purpose `batch`, run
 * in the background line by line through the same routes as direct calls (so greedy answers match them), an output
 * and an error file written at the end, cancel, per-key isolation, and a batch that a stopped handler left halfway
 * finished by a new one over the same storage, every line once.
 */
const CHAT = 'crimson-falcon-4';
const EMBED = 'jade-mole-4';
const engine = createEngine({ profile: testProfile() });

type Client = ReturnType<typeof openaiClient>;
type Line = { custom_id: string; method: string; url: string; body: Record<string, unknown> };

const chatLine = (i: number, extra: Record<string, unknown> = {}): Line => ({
  custom_id: `line-${i}`,
  method: 'POST',
  url: '/v1/chat/completions',
  body: {
    model: CHAT,
    messages: [{ role: 'user', content: `Tell me about the number ${i}.` }],
    max_tokens: 6,
    temperature: 0,
    ...extra,
  },
});

const jsonl = (lines: unknown[]) => lines.map((line) => JSON.stringify(line)).join('\n') + '\n';

const uploadBatch = async (client: Client, text: string, name = 'requests.jsonl') =>
  client.files.create({ file: await toFile(Buffer.from(text), name), purpose: 'batch' });

const TERMINAL = ['completed', 'failed', 'cancelled', 'expired'];

/** Polls the batch (as the SDK's users do) until `done` holds of it. */
async function poll(
  client: Client,
  id: string,
  done: (batch: OpenAI.Batches.Batch) => boolean = (batch) => TERMINAL.includes(batch.status),
  timeoutMs = 120_000,
): Promise<OpenAI.Batches.Batch> {
  const start = Date.now();
  for (;;) {
    const batch = await client.batches.retrieve(id);
    if (done(batch)) return batch;
    if (Date.now() - start > timeoutMs) throw new Error(`batch ${id} still ${batch.status}: ${JSON.stringify(batch)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

interface OutputLine {
  id: string;
  custom_id: string;
  response: { status_code: number; request_id: string; body: Record<string, unknown> } | null;
  error: { code: string; message: string } | null;
}

const readLines = async (client: Client, fileId: string): Promise<OutputLine[]> =>
  (await (await client.files.content(fileId)).text())
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as OutputLine);

/** A response's text, from its message items (the SDK adds `output_text` to what it creates, not to what a file holds). */
const textOf = (response: OpenAI.Responses.Response) =>
  response.output
    .flatMap((item) => (item.type === 'message' ? item.content : []))
    .map((part) => (part.type === 'output_text' ? part.text : ''))
    .join('');

let keys: KeyRing;
let client: Client;

beforeAll(async () => {
  keys = new KeyRing();
  const handler = createHandler({ engine, keys, onServerError: () => {} });
  client = openaiClient(handler, (await keys.issue('batches')).key, { maxRetries: 0 });
});

describe('a batch of chat completions', () => {
  it('runs 20 lines in the background, each answered as a direct call is, into an output file', async () => {
    const lines = Array.from({ length: 20 }, (_, i) => chatLine(i));
    const file = await uploadBatch(client, jsonl(lines));
    expect(file).toMatchObject({ purpose: 'batch', status: 'processed' });
    // OpenAI's default for batch inputs: 30 days.
    expect(file.expires_at).toBe(file.created_at + 2_592_000);

    const created = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      metadata: { job: 'numbers' },
    });
    expect(created).toMatchObject({
      object: 'batch',
      status: 'validating',
      endpoint: '/v1/chat/completions',
      input_file_id: file.id,
      completion_window: '24h',
      metadata: { job: 'numbers' },
      output_file_id: null,
      error_file_id: null,
    });
    expect(created.expires_at).toBe(created.created_at + 86_400);

    const batch = await poll(client, created.id);
    expect(batch).toMatchObject({
      status: 'completed',
      model: CHAT,
      request_counts: { total: 20, completed: 20, failed: 0 },
      error_file_id: null,
      errors: null,
    });
    for (const stamp of ['in_progress_at', 'finalizing_at', 'completed_at'] as const) {
      expect(batch[stamp]).toBeGreaterThanOrEqual(created.created_at);
    }
    const output = await client.files.retrieve(batch.output_file_id!);
    expect(output).toMatchObject({ purpose: 'batch_output', filename: `${batch.id}_output.jsonl` });

    const results = await readLines(client, batch.output_file_id!);
    expect(results.map((line) => line.custom_id)).toEqual(lines.map((line) => line.custom_id));
    for (const [i, result] of results.entries()) {
      expect(result.id).toMatch(/^batch_req_/);
      expect(result.error).toBeNull();
      expect(result.response!.status_code).toBe(200);
      expect(result.response!.request_id).toMatch(/^req_/);
      const direct = await client.chat.completions.create(
        lines[i]!.body as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming,
      );
      const body = result.response!.body as unknown as OpenAI.ChatCompletion;
      expect(body.object).toBe('chat.completion');
      expect(body.choices[0]!.message.content).toBe(direct.choices[0]!.message.content);
      // The direct call may reuse the line's prompt (cached_tokens): the counts are the same.
      expect(body.usage).toMatchObject({
        prompt_tokens: direct.usage!.prompt_tokens,
        completion_tokens: direct.usage!.completion_tokens,
      });
    }
  });

  it('puts a line its route refuses in the error file, with the route’s status and error', async () => {
    const lines = [chatLine(0), chatLine(1, { max_tokens: 1_000_000 }), chatLine(2)];
    const created = await client.batches.create({
      input_file_id: (await uploadBatch(client, jsonl(lines))).id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const batch = await poll(client, created.id);
    expect(batch).toMatchObject({ status: 'completed', request_counts: { total: 3, completed: 2, failed: 1 } });
    expect((await readLines(client, batch.output_file_id!)).map((line) => line.custom_id)).toEqual([
      'line-0',
      'line-2',
    ]);
    const [failed, ...more] = await readLines(client, batch.error_file_id!);
    expect(more).toEqual([]);
    expect(failed).toMatchObject({
      custom_id: 'line-1',
      error: null,
      response: { status_code: 400, body: { error: { type: 'invalid_request_error', param: 'max_tokens' } } },
    });
  });

  it('runs embeddings lines as the embeddings route answers them', async () => {
    const texts = ['a lighthouse', 'a red tomato', 'an espresso machine'];
    const lines = texts.map((input, i) => ({
      custom_id: `embed-${i}`,
      method: 'POST',
      url: '/v1/embeddings',
      body: { model: EMBED, input, encoding_format: 'float' },
    }));
    const created = await client.batches.create({
      input_file_id: (await uploadBatch(client, jsonl(lines))).id,
      endpoint: '/v1/embeddings',
      completion_window: '24h',
    });
    const batch = await poll(client, created.id);
    expect(batch).toMatchObject({ status: 'completed', request_counts: { total: 3, completed: 3, failed: 0 } });
    const direct = await client.embeddings.create({ model: EMBED, input: texts, encoding_format: 'float' });
    const results = await readLines(client, batch.output_file_id!);
    for (const [i, result] of results.entries()) {
      const body = result.response!.body as unknown as OpenAI.CreateEmbeddingResponse;
      expect(body.data[0]!.embedding).toEqual(direct.data[i]!.embedding);
    }
  });
});

describe('other endpoints, and expiry', () => {
  it('runs Responses API lines', async () => {
    const lines = [0, 1].map((i) => ({
      custom_id: `resp-${i}`,
      method: 'POST',
      url: '/v1/responses',
      body: { model: CHAT, input: `Say the number ${i}.`, max_output_tokens: 6, temperature: 0, store: false },
    }));
    const created = await client.batches.create({
      input_file_id: (await uploadBatch(client, jsonl(lines))).id,
      endpoint: '/v1/responses',
      completion_window: '24h',
    });
    const batch = await poll(client, created.id);
    expect(batch).toMatchObject({ status: 'completed', request_counts: { total: 2, completed: 2, failed: 0 } });
    const results = await readLines(client, batch.output_file_id!);
    for (const [i, result] of results.entries()) {
      const direct = await client.responses.create(lines[i]!.body as OpenAI.Responses.ResponseCreateParamsNonStreaming);
      const body = result.response!.body as unknown as OpenAI.Responses.Response;
      expect(body.object).toBe('response');
      expect(textOf(body)).toBe(direct.output_text);
    }
  });

  it('ends a batch past its 24 hours expired: the lines not run in the error file, as batch_expired', async () => {
    let clock = Date.now();
    let calls = 0;
    // The first line's run takes "a day": the lines after it find the window closed.
    const slow: Engine = overrideTask(engine, 'chat', async (model, request, options) => {
      if (++calls === 1) clock += 25 * 60 * 60 * 1000;
      return engine.chat(model, request, options);
    });
    const handler = createHandler({ engine: slow, keys, now: () => clock, batches: { concurrency: 1 } });
    const own = openaiClient(handler, (await keys.issue('expiring')).key, { maxRetries: 0 });
    const created = await own.batches.create({
      input_file_id: (await uploadBatch(own, jsonl([0, 1, 2, 3].map((i) => chatLine(i))))).id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const batch = await poll(own, created.id);
    expect(batch).toMatchObject({ status: 'expired', request_counts: { total: 4, completed: 1, failed: 3 } });
    expect(batch.expired_at).toBeGreaterThanOrEqual(batch.expires_at!);
    expect((await readLines(own, batch.output_file_id!)).map((line) => line.custom_id)).toEqual(['line-0']);
    const expired = await readLines(own, batch.error_file_id!);
    expect(expired.map((line) => [line.custom_id, line.response, line.error?.code])).toEqual([
      ['line-1', null, 'batch_expired'],
      ['line-2', null, 'batch_expired'],
      ['line-3', null, 'batch_expired'],
    ]);
    expect(calls).toBe(1);
  });
});

describe('validation', () => {
  it('fails a batch whose file breaks the format, naming every line and parameter', async () => {
    const good = chatLine(0);
    const text = [
      JSON.stringify(good),
      '{not json',
      JSON.stringify({ ...chatLine(1), custom_id: undefined }),
      JSON.stringify(good),
      JSON.stringify({ ...chatLine(2), method: 'GET' }),
      JSON.stringify({ ...chatLine(3), url: '/v1/embeddings' }),
      JSON.stringify({ ...chatLine(4), body: undefined }),
      '',
      JSON.stringify(chatLine(5, { model: 'jade-mole-4' })),
    ].join('\n');
    const created = await client.batches.create({
      input_file_id: (await uploadBatch(client, text)).id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const batch = await poll(client, created.id);
    expect(batch.status).toBe('failed');
    expect(batch.failed_at).toBeGreaterThanOrEqual(created.created_at);
    expect(batch.errors!.object).toBe('list');
    expect(batch.errors!.data!.map(({ code, line, param }) => ({ code, line, param }))).toEqual([
      { code: 'invalid_json_line', line: 2, param: null },
      { code: 'missing_required_parameter', line: 3, param: 'custom_id' },
      { code: 'duplicate_custom_id', line: 4, param: 'custom_id' },
      { code: 'invalid_method', line: 5, param: 'method' },
      { code: 'url_mismatch', line: 6, param: 'url' },
      { code: 'missing_required_parameter', line: 7, param: 'body' },
      { code: 'model_mismatch', line: 9, param: 'body.model' },
    ]);
    expect(batch.output_file_id).toBeNull();
  });

  it('fails an empty file, and one over the limit of requests', async () => {
    const empty = await client.batches.create({
      input_file_id: (await uploadBatch(client, '\n\n')).id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    expect((await poll(client, empty.id)).errors!.data).toMatchObject([{ code: 'empty_file' }]);

    const small = createHandler({ engine, keys, batches: { limits: { maxRequests: 2 } } });
    const limited = openaiClient(small, (await keys.issue('small')).key, { maxRetries: 0 });
    const over = await limited.batches.create({
      input_file_id: (await uploadBatch(limited, jsonl([chatLine(0), chatLine(1), chatLine(2)]))).id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    expect((await poll(limited, over.id)).errors!.data).toMatchObject([{ code: 'too_many_tasks', line: 3 }]);
  });

  it('refuses a create at once when its parameters or its file cannot make a batch', async () => {
    const input = (await uploadBatch(client, jsonl([chatLine(0)]))).id;
    const documents = await client.files.create({
      file: await toFile(Buffer.from('notes'), 'notes.txt'),
      purpose: 'assistants',
    });
    const create = (params: Record<string, unknown>) =>
      sdkRefusal(
        client.batches.create({
          input_file_id: input,
          endpoint: '/v1/chat/completions',
          completion_window: '24h',
          ...params,
        } as OpenAI.Batches.BatchCreateParams),
      );
    expect(await create({ input_file_id: documents.id })).toMatchObject({ status: 400, param: 'input_file_id' });
    expect(await create({ input_file_id: 'file-nope' })).toMatchObject({ status: 404, param: 'input_file_id' });
    expect(await create({ endpoint: '/v1/moderations' })).toMatchObject({ status: 400, param: 'endpoint' });
    expect(await create({ completion_window: '1h' })).toMatchObject({ status: 400, param: 'completion_window' });
    expect(await create({ metadata: { k: 'x'.repeat(513) } })).toMatchObject({ status: 400 });
    // Batch files are data, not documents: no vector store takes them.
    const store = await client.vectorStores.create({ name: 'docs' });
    expect(await sdkRefusal(client.vectorStores.files.create(store.id, { file_id: input }))).toMatchObject({
      status: 400,
      param: 'file_id',
    });
    // Only the Batch API writes batch_output files.
    expect(
      await sdkRefusal(
        client.files.create({
          file: await toFile(Buffer.from('{}'), 'out.jsonl'),
          purpose: 'batch_output' as 'batch',
        }),
      ),
    ).toMatchObject({ status: 400, param: 'purpose' });
  });
});

describe('managing batches', () => {
  it('cancels a batch: cancelling at once, then cancelled, with no line started after the cancel', async () => {
    const lines = Array.from({ length: 30 }, (_, i) => chatLine(i, { max_tokens: 24 }));
    const created = await client.batches.create({
      input_file_id: (await uploadBatch(client, jsonl(lines))).id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    await poll(client, created.id, (batch) => batch.request_counts!.completed >= 1);
    const cancelling = await client.batches.cancel(created.id);
    expect(cancelling.status).toBe('cancelling');
    expect(cancelling.cancelling_at).toBeGreaterThanOrEqual(created.created_at);
    const batch = await poll(client, created.id);
    expect(batch.status).toBe('cancelled');
    expect(batch.cancelled_at).toBeGreaterThanOrEqual(batch.cancelling_at!);
    const done = batch.request_counts!.completed;
    expect(done).toBeGreaterThanOrEqual(1);
    expect(done).toBeLessThan(30);
    expect(await readLines(client, batch.output_file_id!)).toHaveLength(done);
    // Cancelling again answers the batch as it is; a finished batch cannot be cancelled.
    expect((await client.batches.cancel(created.id)).status).toBe('cancelled');
    const finished = await client.batches.create({
      input_file_id: (await uploadBatch(client, jsonl([chatLine(0)]))).id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    await poll(client, finished.id);
    expect(await sdkRefusal(client.batches.cancel(finished.id))).toMatchObject({ status: 400 });
  });

  it('lists a key’s batches newest first, a page at a time', async () => {
    const handler = createHandler({ engine, keys });
    const own = openaiClient(handler, (await keys.issue('lister')).key, { maxRetries: 0 });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const input = (await uploadBatch(own, jsonl([chatLine(i)]))).id;
      ids.push(
        (await own.batches.create({ input_file_id: input, endpoint: '/v1/chat/completions', completion_window: '24h' }))
          .id,
      );
    }
    const first = await own.batches.list({ limit: 2 });
    expect(first.data.map((batch) => batch.id)).toEqual([ids[2], ids[1]]);
    expect(first.hasNextPage()).toBe(true);
    const second = await first.getNextPage();
    expect(second.data.map((batch) => batch.id)).toEqual([ids[0]]);
    const all: string[] = [];
    for await (const batch of own.batches.list({ limit: 1 })) all.push(batch.id);
    expect(all).toEqual([...ids].reverse());
    for (const id of ids) await poll(own, id);
  });

  it('keeps each key’s batches and their files its own: another key gets 404', async () => {
    const created = await client.batches.create({
      input_file_id: (await uploadBatch(client, jsonl([chatLine(0)]))).id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const batch = await poll(client, created.id);
    const other = openaiClient(createHandler({ engine, keys }), (await keys.issue('other')).key, { maxRetries: 0 });
    expect(await sdkRefusal(other.batches.retrieve(batch.id))).toMatchObject({ status: 404 });
    expect(await sdkRefusal(other.batches.cancel(batch.id))).toMatchObject({ status: 404 });
    expect(await sdkRefusal(other.files.content(batch.output_file_id!))).toMatchObject({ status: 404 });
    expect(
      await sdkRefusal(
        other.batches.create({
          input_file_id: batch.input_file_id,
          endpoint: '/v1/chat/completions',
          completion_window: '24h',
        }),
      ),
    ).toMatchObject({ status: 404, param: 'input_file_id' });
    expect((await other.batches.list()).data).toEqual([]);
  });

  it('stops a batch whose key is revoked, failing it with the reason', async () => {
    const own = await keys.issue('revoked');
    const documents = memoryDocumentStorage();
    const revoked = openaiClient(createHandler({ engine, keys, documents }), own.key, { maxRetries: 0 });
    const lines = Array.from({ length: 30 }, (_, i) => chatLine(i, { max_tokens: 24 }));
    const created = await revoked.batches.create({
      input_file_id: (await uploadBatch(revoked, jsonl(lines))).id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    await poll(revoked, created.id, (batch) => batch.request_counts!.completed >= 1);
    await keys.revoke(own.info.id);
    expect(await sdkRefusal(revoked.batches.retrieve(created.id))).toMatchObject({ status: 401 });
    // Nobody can ask for it now: the storage says how it ended.
    let kept: { batch: OpenAI.Batches.Batch } | undefined;
    for (let tries = 0; tries < 200 && kept?.batch.status !== 'failed'; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      kept = await documents.get('batches', [own.info.id, created.id]);
    }
    expect(kept!.batch.status).toBe('failed');
    expect(kept!.batch.errors!.data).toMatchObject([{ code: 'invalid_api_key' }]);
    expect(kept!.batch.request_counts!.completed).toBeLessThan(30);
  });
});

describe('durability', () => {
  it('resumes a batch that a stopped handler left halfway: every line once, none run twice', async () => {
    const storage = memoryDocumentStorage();
    const ring = new KeyRing();
    const { key } = await ring.issue('durable');
    const lines = Array.from({ length: 12 }, (_, i) => chatLine(i));
    const promptOf = (request: { messages: { content: unknown }[] }) => String(request.messages.at(-1)!.content);

    // The first handler's engine freezes after 5 calls, as a context stopped mid-batch: those lines never finish.
    const firstRuns: string[] = [];
    const freezing: Engine = overrideTask(engine, 'chat', (model, request, options) => {
      firstRuns.push(promptOf(request));
      return firstRuns.length <= 5 ? engine.chat(model, request, options) : new Promise(() => {});
    });
    const first = openaiClient(createHandler({ engine: freezing, keys: ring, documents: storage }), key, {
      maxRetries: 0,
    });
    const created = await first.batches.create({
      input_file_id: (await uploadBatch(first, jsonl(lines))).id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const halfway = await poll(first, created.id, (batch) => batch.request_counts!.completed === 5);
    expect(halfway.status).toBe('in_progress');
    expect(firstRuns.length).toBeGreaterThan(5);

    // A new handler over the same storage: the first request it is given resumes the batch.
    const secondRuns: string[] = [];
    const recording: Engine = overrideTask(engine, 'chat', (model, request, options) => {
      secondRuns.push(promptOf(request));
      return engine.chat(model, request, options);
    });
    const second = openaiClient(createHandler({ engine: recording, keys: ring, documents: storage }), key, {
      maxRetries: 0,
    });
    const batch = await poll(second, created.id);
    expect(batch).toMatchObject({ status: 'completed', request_counts: { total: 12, completed: 12, failed: 0 } });
    const results = await readLines(second, batch.output_file_id!);
    expect(results.map((line) => line.custom_id).sort()).toEqual(lines.map((line) => line.custom_id).sort());
    // The five kept results were not run again; the rest ran once each.
    const finished = firstRuns.slice(0, 5);
    expect(secondRuns).toHaveLength(7);
    expect(secondRuns.filter((prompt) => finished.includes(prompt))).toEqual([]);
    expect(new Set(secondRuns).size).toBe(7);
  });
});
