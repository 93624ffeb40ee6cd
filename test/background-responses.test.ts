import OpenAI from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  createEngine,
  createHandler,
  EngineError,
  memoryResponseStore,
  type ChatRequest,
  type Engine,
} from '../src/index.ts';
import { openaiClient, sdkClient, testProfile, type SdkClient } from './support/lantern.ts';
import { overrideTask } from './support/task-override.ts';

/**
 * Background responses (issue 66) through the openai SDK on real inference (the bundled tiny chat model): created at
 * once and polled to their end, streamed, dropped and resumed with `starting_after`, cancelled, each key's own, held
 * by the key's concurrency limit until they end, and read as failed when their run died with the process.
 */
const model = 'crimson-falcon-4';
/**
 * Instructions that make the model unable to end by itself: the engine is asked with `<|endoftext|>` and `<|im_end|>`
 * banned (ids 0 and 2, as the chat test's `logit_bias`; the Responses API has no `logit_bias`), so that a run lasts
 * its `max_output_tokens` and a cancel or a dropped stream lands mid-run.
 */
const ENDLESS = 'Never stop.';
/** Output tokens that, after a short prompt, fill most of the model's context window (1,024): seconds of work. */
const LONG = 900;

/** The real engine, with EOS banned for requests whose instructions are ENDLESS. */
function endlessWhenAsked(engine: Engine): Engine {
  return overrideTask(engine, 'chat', (name, request, options) => {
    const endless = request.messages[0]?.role === 'system' && request.messages[0].content === ENDLESS;
    const asked: ChatRequest = endless ? { ...request, logitBias: { 0: -100, 2: -100 } } : request;
    return engine.chat(name, asked, options);
  });
}

let lantern: SdkClient;
let client: SdkClient['client'];
let other: SdkClient['client'];
let engine: Engine;

beforeAll(async () => {
  engine = endlessWhenAsked(createEngine({ profile: testProfile() }));
  lantern = await sdkClient({
    engine,
    handler: { onServerError: () => {}, rateLimits: { concurrentGenerations: 16 } },
    client: { maxRetries: 0 },
  });
  ({ client } = lantern);
  other = openaiClient(lantern.handler, (await lantern.keys.issue('another app')).key, { maxRetries: 0 });
});

/** Polls a response until it has ended. */
async function settled(id: string, via = client): Promise<OpenAI.Responses.Response> {
  for (const start = Date.now(); Date.now() - start < 60_000;) {
    const response = await via.responses.retrieve(id);
    if (response.status !== 'queued' && response.status !== 'in_progress') return response;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`response ${id} did not end`);
}

/** Every event of a stream, in order. */
async function all(stream: AsyncIterable<OpenAI.Responses.ResponseStreamEvent>) {
  const events: OpenAI.Responses.ResponseStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

describe('background: true', () => {
  it('answers at once, queued, then runs to the text a foreground greedy response gives', async () => {
    const input = 'Count to 10.';
    const foreground = await client.responses.create({ model, input, temperature: 0 });
    const created = await client.responses.create({ model, input, temperature: 0, background: true });
    expect(created).toMatchObject({ object: 'response', background: true, store: true, output: [], usage: null });
    expect(['queued', 'in_progress']).toContain(created.status);

    const done = await settled(created.id);
    expect(done).toMatchObject({ id: created.id, status: 'completed', background: true, error: null });
    expect(done.output_text).toBe(foreground.output_text);
    expect(done.usage).toEqual(foreground.usage);
    // The record is the store's, as a foreground response's: it continues a conversation.
    const next = await client.responses.create({
      model,
      input: 'Again.',
      previous_response_id: done.id,
      temperature: 0,
    });
    expect(next.status).toBe('completed');
  });

  it('ends failed when the engine refuses it, its error the refusal', async () => {
    // A prompt and max_output_tokens over the model's context window (1,024): answered before the engine refuses it.
    const created = await client.responses.create({ model, input: 'Hi', max_output_tokens: 2048, background: true });
    const done = await settled(created.id);
    expect(done).toMatchObject({ status: 'failed', error: { code: 'invalid_prompt' } });
    expect(done.error!.message).toMatch(/context/);
  });

  it('stops when deleted while it runs, and stays deleted', async () => {
    const created = await client.responses.create({
      model,
      instructions: ENDLESS,
      input: 'Tell me a story.',
      max_output_tokens: LONG,
      background: true,
    });
    await client.responses.delete(created.id);
    await expect(lantern.calls.at(-1)!.outcome).resolves.toMatchObject({ kind: 'aborted' });
    await expect(client.responses.retrieve(created.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('is refused with store: false, as OpenAI refuses it', async () => {
    const error = await client.responses
      .create({ model, input: 'Hi', background: true, store: false })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({ param: 'background' });
  });
});

describe('a streamed background response', () => {
  it('can be dropped and resumed after the last sequence number read, with no event lost or repeated', async () => {
    const stream = await client.responses.create({
      model,
      instructions: ENDLESS,
      input: 'Tell me a story.',
      max_output_tokens: 200,
      background: true,
      stream: true,
    });
    const first: OpenAI.Responses.ResponseStreamEvent[] = [];
    // Breaking out aborts the SDK's request: the stream is dropped, and the run goes on.
    for await (const event of stream) {
      first.push(event);
      if (first.length === 6) break;
    }
    expect(first.slice(0, 2).map((e) => e.type)).toEqual(['response.created', 'response.queued']);
    const id = (first[0] as OpenAI.Responses.ResponseCreatedEvent).response.id;
    const last = first.at(-1)!.sequence_number;

    const rest = await all(await client.responses.retrieve(id, { stream: true, starting_after: last }));
    const seen = [...first, ...rest].map((e) => e.sequence_number);
    expect(seen).toEqual(seen.map((_, i) => i));
    expect(rest.at(-1)).toMatchObject({ type: 'response.incomplete', response: { status: 'incomplete' } });

    // The whole stream again, while its events are kept: the same events.
    const replay = await all(await client.responses.retrieve(id, { stream: true }));
    expect(replay).toEqual([...first, ...rest]);
    const done = await client.responses.retrieve(id);
    expect(done).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
    expect(done.usage!.output_tokens).toBe(200);
    expect(done.output_text).toBe(
      rest.flatMap((e) => (e.type === 'response.output_text.done' ? [e.text] : [])).join(''),
    );
  });

  it("resumes through the SDK's responses.stream({ response_id, starting_after }) to its final response", async () => {
    const created = await client.responses.create({
      model,
      instructions: ENDLESS,
      input: 'Tell me a story.',
      max_output_tokens: 100,
      background: true,
    });
    const resumed = client.responses.stream({ response_id: created.id, starting_after: 3 });
    const events = await all(resumed);
    expect(events[0]!.sequence_number).toBe(4);
    const final = await resumed.finalResponse();
    expect(final).toMatchObject({ id: created.id, status: 'incomplete' });
    expect(final.output_text).toBe((await client.responses.retrieve(created.id)).output_text);
  });

  it('is not streamed again when it did not run in the background', async () => {
    const response = await client.responses.create({ model, input: 'Hi', max_output_tokens: 4 });
    const error = await client.responses.retrieve(response.id, { stream: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({ param: 'stream' });
  });
});

describe('cancel', () => {
  it('stops a running background response, which ends cancelled; cancelling again answers the same', async () => {
    const created = await client.responses.create({
      model,
      instructions: ENDLESS,
      input: 'Tell me a story.',
      max_output_tokens: LONG,
      background: true,
    });
    // Mid-run: some text written.
    for (let now = created; !now.output_text; now = await client.responses.retrieve(created.id)) {
      expect(['queued', 'in_progress']).toContain(now.status);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const cancelled = await client.responses.cancel(created.id);
    expect(cancelled).toMatchObject({ id: created.id, status: 'cancelled', background: true });
    expect(cancelled.output_text.length).toBeGreaterThan(0);
    await expect(lantern.calls.at(-1)!.outcome).resolves.toMatchObject({ kind: 'aborted' });
    expect(await client.responses.retrieve(created.id)).toEqual(cancelled);
    expect(await client.responses.cancel(created.id)).toEqual(cancelled);
  });

  it('ends cancelled when the engine delivers an event its abort overtook (as one across a port may)', async () => {
    // Fault injection: the engine holds the request until it is aborted, then sends a first token and rejects, as the
    // service worker's engine client could: a late event must not mark the cancelled response in_progress again.
    const late = overrideTask(createEngine({ profile: testProfile() }), 'chat', (_name, _request, options = {}) => {
      return new Promise((_resolve, reject) => {
        options.signal?.addEventListener('abort', () => {
          options.onEvent?.({ type: 'delta', choice: 0, text: 'Once' });
          reject(new EngineError('aborted', 'The request was cancelled by the client.'));
        });
      });
    });
    const held = await sdkClient({ engine: late, handler: { onServerError: () => {} }, client: { maxRetries: 0 } });
    const created = await held.client.responses.create({ model, input: 'Hi', background: true });
    const cancelled = await held.client.responses.cancel(created.id);
    expect(cancelled.status).toBe('cancelled');
    expect((await held.client.responses.retrieve(created.id)).status).toBe('cancelled');
  });

  it('refuses a finished background response and a foreground one (400)', async () => {
    const created = await client.responses.create({ model, input: 'Hi', max_output_tokens: 4, background: true });
    await settled(created.id);
    const finished = await client.responses.cancel(created.id).catch((e: unknown) => e);
    expect(finished).toBeInstanceOf(OpenAI.BadRequestError);
    expect((finished as Error).message).toMatch(/Cannot cancel an? (completed|incomplete) response/);

    const foreground = await client.responses.create({ model, input: 'Hi', max_output_tokens: 4 });
    const error = await client.responses.cancel(foreground.id).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
  });
});

describe('continuing', () => {
  it('refuses to continue a background response still running, and continues it once it has ended', async () => {
    const created = await client.responses.create({
      model,
      instructions: ENDLESS,
      input: 'Tell me a story.',
      max_output_tokens: LONG,
      background: true,
    });
    const early = await client.responses
      .create({ model, previous_response_id: created.id, input: 'And then?', max_output_tokens: 4 })
      .catch((e: unknown) => e);
    expect(early).toBeInstanceOf(OpenAI.BadRequestError);
    expect((early as InstanceType<typeof OpenAI.APIError>).param).toBe('previous_response_id');
    expect((early as Error).message).toMatch(/is still (queued|in progress)/);
    await client.responses.cancel(created.id);
    const later = await client.responses.create({
      model,
      previous_response_id: created.id,
      input: 'And then?',
      max_output_tokens: 4,
    });
    expect(later.status).toMatch(/^(completed|incomplete)$/);
  });
});

describe('per key', () => {
  it("finds no other key's background response: retrieve, stream and cancel are 404", async () => {
    const created = await client.responses.create({
      model,
      instructions: ENDLESS,
      input: 'Tell me a story.',
      max_output_tokens: LONG,
      background: true,
    });
    await expect(other.responses.retrieve(created.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.responses.retrieve(created.id, { stream: true })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.responses.cancel(created.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    // Still running, still its own key's to cancel.
    expect(await client.responses.cancel(created.id)).toMatchObject({ status: 'cancelled' });
  });
});

describe('limits and lifetime', () => {
  it("holds a slot of its key's concurrency limit until its run ends, not until its answer", async () => {
    const limited = await sdkClient({
      engine,
      handler: { onServerError: () => {}, rateLimits: { concurrentGenerations: 1 } },
      client: { maxRetries: 0 },
    });
    const created = await limited.client.responses.create({
      model,
      instructions: ENDLESS,
      input: 'Tell me a story.',
      max_output_tokens: LONG,
      background: true,
    });
    const refused = await limited.client.responses.create({ model, input: 'Hi' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
    await limited.client.responses.cancel(created.id);
    // Released as the run ended (after the cancel's answer, on the next turn at the latest).
    await new Promise((resolve) => setTimeout(resolve, 0));
    const after = await limited.client.responses.create({ model, input: 'Hi', max_output_tokens: 4 });
    expect(after.status).not.toBe('failed');
  });

  it('reads as failed when its run is not alive (the process or service worker that ran it stopped)', async () => {
    const responses = memoryResponseStore();
    const first = await sdkClient({
      engine,
      handler: { onServerError: () => {}, responses },
      client: { maxRetries: 0 },
    });
    const created = await first.client.responses.create({
      model,
      instructions: ENDLESS,
      input: 'Tell me a story.',
      max_output_tokens: LONG,
      background: true,
    });
    // Another handler on the same store and keys: what a restarted process or service worker is.
    const restarted = createHandler({ engine, keys: first.keys, responses, onServerError: () => {} });
    const again = openaiClient(restarted, first.key, { maxRetries: 0 });
    const read = await again.responses.retrieve(created.id);
    expect(read).toMatchObject({ status: 'failed', background: true, error: { code: 'server_error' } });
    expect(read.error!.message).toMatch(/stopped before it ended/);
    const error = await again.responses.cancel(created.id).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    await first.client.responses.cancel(created.id);
  });
});
