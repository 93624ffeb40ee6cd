import OpenAI from 'openai';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { createEngine, EngineError, PUBLIC_MODELS, type Handler } from '../src/index.ts';
import { BUNDLED_MODELS, openaiClient, sdkClient, testProfile, type SdkClient } from './support/lantern.ts';
import { overrideTask } from './support/task-override.ts';

/**
 * Every endpoint and every error class, as the official openai SDK sees them, on the bundled models: one engine for
 * every handler here, so that the models load once.
 */
const engine = createEngine({ profile: testProfile() });
const hello = [{ role: 'user' as const, content: 'Hello' }];

let keys: SdkClient['keys'];
let handler: Handler;
let client: SdkClient['client'];

beforeAll(async () => {
  ({ client, handler, keys } = await sdkClient({ engine }));
});

type APIError = InstanceType<typeof OpenAI.APIError>;

async function failure(promise: Promise<unknown>): Promise<APIError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(OpenAI.APIError);
  const apiError = error as APIError;
  expect(apiError.requestID).toMatch(/^req_[0-9a-f]{32}$/);
  return apiError;
}

describe('models', () => {
  it('lists the public models (the five, where every engine serves) with one owner', async () => {
    const models = [];
    for await (const m of client.models.list()) models.push(m);
    expect(models.map((m) => m.id)).toEqual(
      Object.keys(PUBLIC_MODELS).filter((id) => Object.hasOwn(testProfile(), id)),
    );
    expect(new Set(models.map((m) => m.owned_by))).toEqual(new Set(['lantern']));
    for (const m of models) {
      expect(m.object).toBe('model');
      expect(Number.isInteger(m.created)).toBe(true);
    }
  });

  it('retrieves one model, and 404s an unknown one', async () => {
    expect(await client.models.retrieve('jade-mole-4')).toMatchObject({ id: 'jade-mole-4', object: 'model' });
    const error = await failure(client.models.retrieve('gpt-4o-2024-08-06'));
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(error.code).toBe('model_not_found');
  });
});

describe('error classes', () => {
  it('BadRequestError names the parameter', async () => {
    // Each request starts only when its turn comes: a rejection nobody awaits yet would be an unhandled one.
    const cases: [() => Promise<unknown>, string][] = [
      [
        () => client.chat.completions.create({ model: 'crimson-falcon-4', messages: hello, temperature: 2.5 }),
        'temperature',
      ],
      [() => client.chat.completions.create({ model: 'crimson-falcon-4', messages: [] }), 'messages'],
      [() => client.chat.completions.create({ model: 'crimson-falcon-4', messages: hello, n: 99 }), 'n'],
      [
        () => client.chat.completions.create({ model: 'crimson-falcon-4', messages: hello, max_tokens: 1e6 }),
        'max_tokens',
      ],
      [() => client.embeddings.create({ model: 'jade-mole-4', input: Array(2049).fill('x') }), 'input'],
      [() => client.embeddings.create({ model: 'jade-mole-4', input: 'x'.repeat(40_000) }), 'input'],
    ];
    for (const [request, param] of cases) {
      const error = await failure(request());
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error.param).toBe(param);
      expect(error.type).toBe('invalid_request_error');
    }
  });

  it('BadRequestError for a body over the size limit and for too many messages', async () => {
    const { client: smallClient } = await sdkClient({
      engine,
      handler: { limits: { maxBodyBytes: 1024, maxMessages: 2 } },
    });
    const big = await failure(
      smallClient.chat.completions.create({
        model: 'crimson-falcon-4',
        messages: [{ role: 'user', content: 'x'.repeat(2000) }],
      }),
    );
    expect(big).toBeInstanceOf(OpenAI.BadRequestError);
    expect(big.code).toBe('request_too_large');
    const many = await failure(
      smallClient.chat.completions.create({ model: 'crimson-falcon-4', messages: [...hello, ...hello, ...hello] }),
    );
    expect(many).toMatchObject({ status: 400, param: 'messages' });
  });

  it('AuthenticationError for a wrong key and for a revoked key', async () => {
    const wrong = await failure(openaiClient(handler, 'lt_not-a-key-we-issued-0000').models.list());
    expect(wrong).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(wrong.code).toBe('invalid_api_key');

    const { key, info } = await keys.issue('to revoke');
    const revocable = openaiClient(handler, key);
    await revocable.models.list();
    await keys.revoke(info.id);
    const revoked = await failure(revocable.chat.completions.create({ model: 'crimson-falcon-4', messages: hello }));
    expect(revoked).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(revoked.message).toMatch(/revoked/);
  });

  it('NotFoundError for an unknown model and for a model on the wrong endpoint', async () => {
    for (const request of [
      () => client.chat.completions.create({ model: 'gpt-4o-2024-08-06', messages: hello }),
      () => client.chat.completions.create({ model: 'jade-mole-4', messages: hello }),
      () => client.embeddings.create({ model: 'crimson-falcon-4', input: 'x' }),
    ]) {
      const error = await failure(request());
      expect(error).toBeInstanceOf(OpenAI.NotFoundError);
      expect(error.code).toBe('model_not_found');
    }
  });

  it('RateLimitError carries retry-after headers, and a later request is admitted', async () => {
    let now = Date.UTC(2026, 0, 1);
    const { client: limitedClient } = await sdkClient({
      engine,
      handler: { rateLimits: { requestsPerMinute: 2 }, now: () => now },
      client: { maxRetries: 0 },
    });
    const ask = () =>
      limitedClient.chat.completions.create({ model: 'crimson-falcon-4', messages: hello, max_tokens: 2 });
    await ask();
    await ask();
    const error = await failure(ask());
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(error.headers?.get('retry-after-ms')).toBe('30000');
    expect(error.headers?.get('x-ratelimit-limit-requests')).toBe('2');
    now += 30_000;
    await expect(ask()).resolves.toMatchObject({ object: 'chat.completion' });
  });

  it('the SDK honours retry-after-ms: a request refused while another generates succeeds on its retry', async () => {
    const { client: sdk } = await sdkClient({
      engine,
      handler: { rateLimits: { concurrentGenerations: 1 } },
      client: { maxRetries: 2 },
    });
    const first = await sdk.chat.completions.create({
      model: 'crimson-falcon-4',
      messages: [{ role: 'user', content: 'Tell me a story.' }],
      stream: true,
    });
    const iterator = first[Symbol.asyncIterator]();
    await iterator.next(); // the first generation holds the only slot
    const second = sdk.chat.completions.create({ model: 'crimson-falcon-4', messages: hello, temperature: 0 });
    await vi.waitFor(() => expect(sdk.statuses).toEqual([200, 429]));
    while (!(await iterator.next()).done); // the first finishes while the SDK waits the 1 s it was told
    expect((await second).choices[0]!.message.content).toBe('Hello! How can I help you today?');
    expect(sdk.statuses.at(-1)).toBe(200);
  });

  it('InternalServerError for a model that cannot load, not retried, and the next request succeeds', async () => {
    const { client: failing } = await sdkClient({
      profile: {
        ...testProfile(),
        'amber-phoenix-4': {
          task: 'chat',
          created: 0,
          candidates: [{ engine: 'transformers', model: `${BUNDLED_MODELS}/no-such-model`, device: 'cpu' }],
        },
      },
      handler: { onServerError: () => {} },
    });
    const error = await failure(failing.chat.completions.create({ model: 'amber-phoenix-4', messages: hello }));
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect(error.code).toBe('model_load_failed');
    expect(error.headers?.get('x-should-retry')).toBe('false');
    expect(failing.statuses).toEqual([500]);
    const next = await failing.chat.completions.create({ model: 'crimson-falcon-4', messages: hello, temperature: 0 });
    expect(next.choices[0]!.message.content).toBe('Hello! How can I help you today?');
  });

  it('InternalServerError for an engine that broke mid-run is retried by the SDK, and the retry succeeds', async () => {
    // An engine error of kind `internal` is what a broken engine worker answers, just before the host replaces it: the
    // next try runs on a fresh worker. Here the first run fails that way and later ones reach the real engine.
    let failures = 0;
    const breaksOnce = overrideTask(engine, 'chat', async (id, request, options) => {
      if (failures++ === 0) throw new EngineError('internal', 'The WebGPU device was lost.');
      return engine.chat(id, request, options);
    });
    const { client: sdk } = await sdkClient({ engine: breaksOnce, handler: { onServerError: () => {} } });
    const answer = await sdk.chat.completions.create({ model: 'crimson-falcon-4', messages: hello, temperature: 0 });
    expect(answer.choices[0]!.message.content).toBe('Hello! How can I help you today?');
    expect(sdk.statuses).toEqual([500, 200]);
  });
});
