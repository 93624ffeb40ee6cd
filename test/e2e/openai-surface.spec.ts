import { expect, PORTABLE, test } from './browsers.ts';
import { issueKey, openHarness } from './harness-page.ts';

/*
 * The OpenAI surface that SDK defaults call in late 2026, through the real service worker and engine worker, with
 * the clients apps bundle, unmodified: the response object's required fields, `responses.compact` and
 * `responses.inputTokens.count`, and the Agents SDK's compaction session; each per key. The routes run in the service
 * worker as every other does, so the WebAssembly project is enough.
 */
let key: string;

test.use({ profileScope: 'shared' });

test.skip(
  ({ device }) => device === 'webgpu',
  'the same service worker code on both paths: the wasm project covers it',
);

test.beforeEach(async ({ tab }) => {
  await openHarness(tab);
  key = await issueKey(tab);
});

test(
  'openai SDK: required response fields, input token counts equal to usage, compaction read back as context',
  { tag: PORTABLE },
  async ({ tab }) => {
    const otherKey = await issueKey(tab);
    const result = await tab.evaluate(
      async ({ k, other }) => {
        const client = window.harness.client(k);
        const stranger = window.harness.client(other);
        const model = 'crimson-falcon-4';
        const first = await client.responses.create({
          model,
          input: 'My name is Alice.',
          max_output_tokens: 12,
          safety_identifier: 'user-1',
          prompt_cache_key: 'names',
        });
        const counted = await client.responses.inputTokens.count({
          model,
          previous_response_id: first.id,
          input: 'What is my name?',
        });
        const second = await client.responses.create({
          model,
          previous_response_id: first.id,
          input: 'What is my name?',
          max_output_tokens: 8,
        });
        const compacted = await client.responses.compact({ model, previous_response_id: second.id });
        const next = await client.responses.create({
          model,
          input: [...compacted.output, { role: 'user', content: 'And where do I live?' }] as never,
          max_output_tokens: 8,
        });
        const foreign = await stranger.responses
          .compact({ model, previous_response_id: second.id })
          .then(() => 'answered')
          .catch((error: unknown) => window.harness.describeError(error));
        const fields = [
          'presence_penalty',
          'frequency_penalty',
          'max_tool_calls',
          'safety_identifier',
          'prompt_cache_key',
          'user',
        ] as const;
        return {
          echoed: Object.fromEntries(fields.map((f) => [f, (first as unknown as Record<string, unknown>)[f]])),
          counted: counted.input_tokens,
          reported: second.usage!.input_tokens,
          compacted: compacted.output.map((item) => item.type),
          next: next.status,
          foreign,
        };
      },
      { k: key, other: otherKey },
    );
    expect(result.echoed).toEqual({
      presence_penalty: 0,
      frequency_penalty: 0,
      max_tool_calls: null,
      safety_identifier: 'user-1',
      prompt_cache_key: 'names',
      user: null,
    });
    expect(result.counted).toBe(result.reported);
    expect(result.compacted).toEqual(['message', 'message', 'compaction']);
    expect(result.next).toMatch(/^(completed|incomplete)$/);
    expect(result.foreign).toBe('BadRequestError previous_response_not_found');
  },
);

test('Agents SDK: OpenAIResponsesCompactionSession compacts after each turn through the service worker', async ({
  tab,
}) => {
  const result = await tab.evaluate(async (k) => {
    const { Agent, Runner, OpenAIProvider, OpenAIResponsesCompactionSession } = window.harness.agents;
    const statuses: string[] = [];
    const client = new window.harness.OpenAI({
      baseURL: window.harness.lantern.baseURL,
      apiKey: k,
      dangerouslyAllowBrowser: true,
      maxRetries: 0,
      fetch: async (url: RequestInfo | URL, init?: RequestInit) => {
        const response = await fetch(url, init);
        statuses.push(`${new URL(String(url)).pathname} ${response.status}`);
        return response;
      },
    });
    const runner = new Runner({
      modelProvider: new OpenAIProvider({ openAIClient: client, useResponses: true }),
      tracingDisabled: true,
    });
    const session = new OpenAIResponsesCompactionSession({
      client,
      model: 'gpt-4o-mini',
      shouldTriggerCompaction: () => true,
    });
    const agent = new Agent({
      name: 'assistant',
      instructions: 'Answer briefly.',
      model: 'gpt-4o-mini',
      modelSettings: { temperature: 0, maxTokens: 12 },
    });
    for (const question of ['My name is Alice.', 'What is my name?']) await runner.run(agent, question, { session });
    const items = (await session.getItems()) as { type: string; role?: string }[];
    return { statuses, kinds: items.map((item) => item.role ?? item.type) };
  }, key);
  expect(result.statuses).toEqual([
    '/v1/responses 200',
    '/v1/responses/compact 200',
    '/v1/responses 200',
    '/v1/responses/compact 200',
  ]);
  expect(result.kinds).toEqual(['user', 'user', 'compaction']);
});

test(
  'openai SDK: a background response polled to its end, a dropped stream resumed, a cancel; another key sees none',
  { tag: PORTABLE },
  async ({ tab }) => {
    const otherKey = await issueKey(tab);
    const result = await tab.evaluate(
      async ({ k, other }) => {
        const client = window.harness.client(k);
        const stranger = window.harness.client(other);
        const model = 'crimson-falcon-4';
        const ask = { model, input: 'Count to 10.', temperature: 0, max_output_tokens: 40 };
        const foreground = await client.responses.create(ask);
        const queued = await client.responses.create({ ...ask, background: true });
        let polled = queued;
        while (polled.status === 'queued' || polled.status === 'in_progress') {
          await new Promise((resolve) => setTimeout(resolve, 50));
          polled = await client.responses.retrieve(queued.id);
        }
        // A streamed background response, dropped after a few events and resumed after the last one seen.
        const stream = await client.responses.create({ ...ask, background: true, stream: true });
        const seen: number[] = [];
        let id = '';
        for await (const event of stream) {
          seen.push(event.sequence_number);
          if (event.type === 'response.created') id = event.response.id;
          if (seen.length === 4) break;
        }
        const resumed = await client.responses.retrieve(id, { stream: true, starting_after: seen.at(-1)! });
        const rest: { type: string; sequence_number: number; text?: string }[] = [];
        for await (const event of resumed)
          rest.push({
            type: event.type,
            sequence_number: event.sequence_number,
            ...(event.type === 'response.completed' && { text: event.response.output_text }),
          });
        const long = await client.responses.create({
          model,
          input: 'Tell me a story.',
          max_output_tokens: 900,
          background: true,
        });
        const cancelled = await client.responses.cancel(long.id);
        const foreign = await stranger.responses
          .retrieve(queued.id)
          .then(() => 'answered')
          .catch((error: unknown) => window.harness.describeError(error));
        return {
          queued: { status: queued.status, background: queued.background },
          polled: { status: polled.status, text: polled.output_text },
          foreground: foreground.output_text,
          seen,
          rest,
          cancelled: cancelled.status,
          foreign,
        };
      },
      { k: key, other: otherKey },
    );
    expect(result.queued).toEqual({ status: 'queued', background: true });
    expect(result.polled).toEqual({ status: 'completed', text: result.foreground });
    const numbers = [...result.seen, ...result.rest.map((e) => e.sequence_number)];
    expect(numbers).toEqual(numbers.map((_, i) => i));
    expect(result.rest.at(-1)).toMatchObject({ type: 'response.completed', text: result.foreground });
    expect(result.cancelled).toBe('cancelled');
    expect(result.foreign).toBe('NotFoundError not_found');
  },
);

test(
  'openai SDK: a conversation two responses join, its items paged; stored chat completions listed by metadata',
  { tag: PORTABLE },
  async ({ tab }) => {
    const otherKey = await issueKey(tab);
    const result = await tab.evaluate(
      async ({ k, other }) => {
        const client = window.harness.client(k);
        const stranger = window.harness.client(other);
        const model = 'crimson-falcon-4';
        const conversation = await client.conversations.create({
          items: [{ type: 'message', role: 'system', content: 'You are terse.' }],
          metadata: { topic: 'counting' },
        });
        const first = await client.responses.create({
          model,
          conversation: conversation.id,
          input: 'Count to 10.',
          max_output_tokens: 8,
        });
        const second = await client.responses.create({
          model,
          conversation: { id: conversation.id },
          input: 'Again.',
          max_output_tokens: 8,
        });
        const items = [];
        for await (const item of client.conversations.items.list(conversation.id, { order: 'asc', limit: 2 }))
          items.push(item.type === 'message' ? item.role : item.type);
        const inputItems = await client.responses.inputItems.list(second.id);
        const foreign = await stranger.conversations
          .retrieve(conversation.id)
          .then(() => 'answered')
          .catch((error: unknown) => window.harness.describeError(error));

        const stored = await client.chat.completions.create({
          model,
          messages: [{ role: 'user', content: 'Count to 3.' }],
          max_tokens: 6,
          store: true,
          metadata: { run: 'e2e' },
        });
        await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 });
        const listed = await client.chat.completions.list({ metadata: { run: 'e2e' } });
        const messages = await client.chat.completions.messages.list(stored.id);
        const updated = await client.chat.completions.update(stored.id, { metadata: { run: 'done' } });
        const deleted = await client.chat.completions.delete(stored.id);
        return {
          joined: [first.conversation, second.conversation],
          items,
          inputItems: inputItems.data.length,
          foreign,
          listed: listed.data.map((c) => c.id),
          stored: stored.id,
          messages: messages.data.map((m) => m.content),
          updated: (updated as { metadata?: unknown }).metadata,
          deleted: deleted.deleted,
        };
      },
      { k: key, other: otherKey },
    );
    expect(result.joined).toEqual([{ id: expect.stringMatching(/^conv_/) }, { id: expect.stringMatching(/^conv_/) }]);
    // The system message, then each turn's input and output, oldest first, read two a page.
    expect(result.items).toEqual(['system', 'user', 'assistant', 'user', 'assistant']);
    expect(result.inputItems).toBeGreaterThanOrEqual(4);
    expect(result.foreign).toBe('NotFoundError not_found');
    expect(result.listed).toEqual([result.stored]);
    expect(result.messages).toEqual(['Count to 3.']);
    expect(result.updated).toEqual({ run: 'done' });
    expect(result.deleted).toBe(true);
  },
);

test('Agents SDK: OpenAIConversationsSession keeps a two-turn run in a conversation through the service worker', async ({
  tab,
}) => {
  const result = await tab.evaluate(async (k) => {
    const { Agent, Runner, OpenAIProvider, OpenAIConversationsSession } = window.harness.agents;
    const client = window.harness.client(k);
    const runner = new Runner({
      modelProvider: new OpenAIProvider({ openAIClient: client, useResponses: true }),
      tracingDisabled: true,
    });
    const session = new OpenAIConversationsSession({ client });
    const agent = new Agent({
      name: 'assistant',
      instructions: 'Answer briefly.',
      model: 'gpt-4o-mini',
      modelSettings: { temperature: 0, maxTokens: 12 },
    });
    const outputs = [];
    for (const question of ['My name is Alice.', 'What is my name?'])
      outputs.push(typeof (await runner.run(agent, question, { session })).finalOutput);
    const items = (await session.getItems()) as { type?: string; role?: string }[];
    return { outputs, id: await session.getSessionId(), kinds: items.map((item) => item.role ?? item.type) };
  }, key);
  expect(result.outputs).toEqual(['string', 'string']);
  expect(result.id).toMatch(/^conv_/);
  expect(result.kinds).toEqual(['user', 'assistant', 'user', 'assistant']);
});

test(
  'openai SDK: WebSocket mode in a page, on LocalResponsesSocket through the service worker',
  { tag: PORTABLE },
  async ({ tab }) => {
    const result = await tab.evaluate(async (k) => {
      const { ResponsesWSBase, LocalResponsesSocket } = window.harness.websocket;
      class LocalResponsesWS extends ResponsesWSBase<InstanceType<typeof LocalResponsesSocket>> {
        constructor(client: InstanceType<typeof window.harness.OpenAI>) {
          super(client);
          this._connectInitial();
        }
        protected override _createSocket(url: URL, authHeaders: Record<string, string>) {
          return new LocalResponsesSocket(url, authHeaders);
        }
      }
      const ws = new LocalResponsesWS(window.harness.client(k));
      const turn = (params: Record<string, unknown>) =>
        new Promise<{ type: string; id?: string; text?: string; code?: string }[]>((resolve) => {
          const seen: { type: string; id?: string; text?: string; code?: string }[] = [];
          const listener = (event: { type: string; response?: { id: string; output_text?: string } }) => {
            seen.push({
              type: event.type,
              ...(event.response && { id: event.response.id }),
              ...(event.type === 'response.completed' && { text: event.response!.output_text }),
            });
            if (event.type === 'response.completed' || event.type === 'response.incomplete') {
              ws.off('event', listener as never);
              resolve(seen);
            }
          };
          ws.on('event', listener as never);
          ws.send({ type: 'response.create', ...params } as never);
        });
      const first = await turn({ model: 'crimson-falcon-4', input: 'Count to 10.', max_output_tokens: 8 });
      const id = first.find((e) => e.id)!.id!;
      const second = await turn({
        model: 'crimson-falcon-4',
        input: 'Go on.',
        previous_response_id: id,
        max_output_tokens: 4,
      });
      ws.close();
      return { first: first.map((e) => e.type), second: second.at(-1)!.type };
    }, key);
    expect(result.first.slice(0, 2)).toEqual(['response.created', 'response.in_progress']);
    expect(result.first.at(-1)).toMatch(/^response\.(completed|incomplete)$/);
    expect(result.second).toMatch(/^response\.(completed|incomplete)$/);
  },
);

test(
  'Agents SDK: a Realtime session on LocalRealtimeSocket (no WebRTC), with a client secret, through the service worker',
  { tag: PORTABLE },
  async ({ tab }) => {
    const result = await tab.evaluate(async (k) => {
      const { RealtimeSession, RealtimeAgent, OpenAIRealtimeWebSocket, LocalRealtimeSocket } = window.harness.realtime;
      const client = window.harness.client(k);
      const transport = new OpenAIRealtimeWebSocket({
        createWebSocket: async ({ url, apiKey }) => new LocalRealtimeSocket(url, apiKey!) as never,
      });
      const agent = new RealtimeAgent({ name: 'Assistant', instructions: 'Answer briefly.' });
      const session = new RealtimeSession(agent, { transport, model: 'gpt-realtime' });
      let audioBytes = 0;
      session.on('audio', (event) => (audioBytes += event.data.byteLength));
      const errors: string[] = [];
      session.on('error', (event) => errors.push(JSON.stringify(event.error).slice(0, 300)));
      await session.connect({
        // In a browser the SDK takes a client secret only, as with OpenAI.
        apiKey: async () => (await client.realtime.clientSecrets.create({ session: { type: 'realtime' } })).value,
        url: `${location.origin}/v1/realtime?model=gpt-realtime`,
      });
      const answered = () =>
        session.history.some(
          (item) => item.type === 'message' && item.role === 'assistant' && item.status === 'completed',
        );
      session.sendMessage('Say hello.');
      for (let waited = 0; !answered() && waited < 120_000; waited += 100) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const roles = session.history.flatMap((item) => (item.type === 'message' ? [item.role] : []));
      session.close();
      return { answered: answered(), roles, audioBytes, errors };
    }, key);
    expect(result.errors).toEqual([]);
    expect(result.answered).toBe(true);
    expect(result.roles).toEqual(['user', 'assistant']);
    // The reply was spoken too (PCM16 at 24 kHz, as response.output_audio.delta events): at least a tenth of a second.
    expect(result.audioBytes).toBeGreaterThan(4800);
  },
);
