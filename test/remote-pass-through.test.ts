import { readFileSync } from 'node:fs';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine, ModelProfile, RemoteCandidate } from '../src/index.ts';
import { chatRequest } from './support/chat-request.ts';
import {
  HAS_STORIES_260K,
  reference,
  sdkClient,
  STORIES_260K,
  type ChatReference,
  type SdkClient,
} from './support/lantern.ts';
import { speechClip } from './support/speech-fixture.ts';
import { chatTool, GET_WEATHER, responsesTool } from './support/tools.ts';
import { startUpstream, type Upstream } from './support/upstream.ts';
import { clipAllowance, wordErrors } from './support/word-error-rate.ts';

/**
 * Remote candidates, answered: Lantern in this process forwards to Lantern's own Node server in another process, over
 * real HTTP on loopback, and what the client gets is what that server said, with the public ID as `model`. Each answer
 * is compared with the same request sent to the server directly.
 */
const count = reference<ChatReference[]>('tiny-chat').find((r) => r.messages.at(-1)!.content === 'Count to 10.')!;

let upstream: Upstream;
let gated: Upstream;
let engine: Engine;
let client: SdkClient['client'];
let direct: OpenAI;

/** The JSON schema that the structured-output tests below ask the server to enforce. */
const weather = {
  type: 'object',
  properties: { city: { enum: ['Paris', 'Oslo', 'Lima'] }, raining: { type: 'boolean' } },
  required: ['city', 'raining'],
  additionalProperties: false,
};

/** The bits of an answer that differ between any two answers (ids, clocks) and the one Lantern sets (model). */
const normalized = (value: unknown): unknown =>
  JSON.parse(JSON.stringify(value), (key, v: unknown) => (['id', 'created', 'model'].includes(key) ? '…' : v));

/** The same streamed chat request through Lantern's remote candidate and to the server directly: each side's chunks. */
async function bothStreams(
  request: Omit<OpenAI.ChatCompletionCreateParamsStreaming, 'model' | 'stream'>,
): Promise<[OpenAI.ChatCompletionChunk[], OpenAI.ChatCompletionChunk[]]> {
  const collect = async (sdk: OpenAI, model: string) => {
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of await sdk.chat.completions.create({ ...request, model, stream: true }))
      chunks.push(chunk);
    return chunks;
  };
  // One after the other, as a client would send them: the server answers each alone.
  return [await collect(client, 'far-falcon'), await collect(direct, 'crimson-falcon-4')];
}

beforeAll(async () => {
  [upstream, gated] = await Promise.all([
    startUpstream({ mode: 'lantern', ...(HAS_STORIES_260K && { stories: STORIES_260K }) }),
    startUpstream({ mode: 'lantern', gated: true, ignoreEncodingFormat: true }),
  ]);
  const only = (task: 'chat' | 'embeddings' | 'transcription' | 'speech', candidate: RemoteCandidate) => ({
    task,
    created: 7,
    candidates: [candidate],
  });
  const profile: ModelProfile = {
    // Public IDs of this Lantern that are not the server's names for its models.
    'far-falcon': only('chat', upstream.candidate('crimson-falcon-4')),
    'far-mole': only('embeddings', upstream.candidate('jade-mole-4')),
    'far-stories': only('chat', upstream.candidate('stories-260k')),
    'paced-falcon': only('chat', gated.candidate('crimson-falcon-4')),
    'floats-mole': only('embeddings', gated.candidate('jade-mole-4')),
    'far-finch': only('transcription', upstream.candidate('teal-finch-4')),
    'far-lark': only('speech', upstream.candidate('ochre-lark-4')),
  };
  ({ client, engine } = await sdkClient({ profile }));
  direct = new OpenAI({ baseURL: upstream.baseURL, apiKey: upstream.key, maxRetries: 0 });
});
afterAll(() => Promise.all([upstream?.kill(), gated?.kill()]));

describe('chat', () => {
  it("answers with the server's completion, under the public ID, naming the server that answered", async () => {
    const { data, response } = await client.chat.completions
      .create({ model: 'far-falcon', messages: count.messages, temperature: 0 })
      .withResponse();
    const theirs = await direct.chat.completions.create({
      model: 'crimson-falcon-4',
      messages: count.messages,
      temperature: 0,
    });
    expect(data.model).toBe('far-falcon');
    expect(data.choices[0]!.message.content).toBe(count.greedy_text);
    expect(normalized(data)).toEqual(normalized(theirs));
    expect(response.headers.get('x-lantern-backend')).toBe('remote:1');
  });

  it('streams every chunk the server sent, as it sent it, usage included', async () => {
    const request = {
      messages: count.messages,
      temperature: 0,
      stream: true as const,
      stream_options: { include_usage: true },
    };
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'far-falcon', ...request })
      .withResponse();
    const ours = [];
    for await (const chunk of stream) ours.push(chunk);
    const theirs = [];
    for await (const chunk of await direct.chat.completions.create({ model: 'crimson-falcon-4', ...request })) {
      theirs.push(chunk);
    }
    expect(ours.length).toBeGreaterThan(10); // token by token
    expect(new Set(ours.map((c) => c.model))).toEqual(new Set(['far-falcon']));
    expect(normalized(ours)).toEqual(normalized(theirs));
    expect(ours.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(count.greedy_text);
    expect(ours.at(-1)!.usage?.completion_tokens).toBe(count.greedy_ids.length);
    expect(response.headers.get('x-lantern-backend')).toBe('remote:1');
  });

  it("sends the server the client's own body, every field as it was sent, with the server's model name", async () => {
    const sent = {
      model: 'far-falcon',
      messages: [
        { role: 'system' as const, content: 'Be brief.' },
        { role: 'user' as const, content: [{ type: 'text' as const, text: 'Count to 10.' }] },
      ],
      temperature: 0.5,
      top_p: 0.9,
      seed: 42,
      n: 2,
      stop: ['7'],
      max_completion_tokens: 30,
      presence_penalty: 0.5,
      logit_bias: { '5': -1 },
      response_format: { type: 'text' as const },
      logprobs: false,
      user: 'user-1',
      metadata: { trace: 'abc' },
      store: false,
    };
    await client.chat.completions.create(sent);
    const received = await upstream.waitFor('request', (m) => (m.body as { seed?: number }).seed === 42);
    expect(received.body).toEqual({ ...sent, model: 'crimson-falcon-4' });
  });

  it('passes response_format and logprobs through: the JSON and log probabilities the server gives directly', async () => {
    const request = {
      messages: [{ role: 'user' as const, content: 'What is the weather? Answer in JSON.' }],
      temperature: 0,
      max_tokens: 40,
      response_format: { type: 'json_schema' as const, json_schema: { name: 'weather', schema: weather } },
      logprobs: true,
      top_logprobs: 2,
    };
    const ours = await client.chat.completions.create({ model: 'far-falcon', ...request });
    const theirs = await direct.chat.completions.create({ model: 'crimson-falcon-4', ...request });
    expect(normalized(ours)).toEqual(normalized(theirs));
    expect(JSON.parse(ours.choices[0]!.message.content!)).toMatchObject({ city: expect.any(String) });
    expect(ours.choices[0]!.logprobs!.content!.length).toBeGreaterThan(3);
    // Where the schema leaves a choice, the alternatives are there too.
    expect(ours.choices[0]!.logprobs!.content!.some((t) => t.top_logprobs.length === 2)).toBe(true);

    const [streamed, theirStream] = await bothStreams(request);
    expect(normalized(streamed)).toEqual(normalized(theirStream));
  });

  it('passes tool calls through, streamed and not, and the conversation that answers them, as the server makes them', async () => {
    const tools = [chatTool(GET_WEATHER)];
    const asked = { role: 'user' as const, content: 'What is the weather in Paris?' };
    const request = { messages: [asked], tools, tool_choice: 'required' as const, temperature: 0 };
    const ours = await client.chat.completions.create({ model: 'far-falcon', ...request });
    const theirs = await direct.chat.completions.create({ model: 'crimson-falcon-4', ...request });
    expect(normalized(ours)).toEqual(normalized(theirs));
    expect(ours.choices[0]!.finish_reason).toBe('tool_calls');
    const call = ours.choices[0]!.message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual({ city: expect.any(String) });

    const [streamed, theirStream] = await bothStreams(request);
    expect(normalized(streamed)).toEqual(normalized(theirStream));
    // The SDK's stream helper accumulates the forwarded deltas into the same call.
    const final = await client.chat.completions.stream({ model: 'far-falcon', ...request }).finalChatCompletion();
    expect(final.choices[0]!.message.tool_calls).toEqual([{ ...call, id: expect.stringMatching(/^call_/) }]);

    // The call answered: a tool message and the assistant's calls cross to the server as the client sent them.
    const answered = {
      messages: [
        asked,
        ours.choices[0]!.message,
        { role: 'tool' as const, tool_call_id: call.id, content: '{"temperature": 18, "condition": "sunny"}' },
      ],
      tools,
      temperature: 0,
    };
    const answer = await client.chat.completions.create({ model: 'far-falcon', ...answered });
    const theirAnswer = await direct.chat.completions.create({ model: 'crimson-falcon-4', ...answered });
    expect(normalized(answer)).toEqual(normalized(theirAnswer));
    const received = await upstream.waitFor('request', (m) =>
      JSON.stringify(m.body).includes(`"tool_call_id":"${call.id}"`),
    );
    expect(received.body).toEqual({ ...answered, model: 'crimson-falcon-4' });
  });

  it('through the typed engine interface too (a caller with no wire body)', async () => {
    const events: string[] = [];
    const result = await engine.chat('far-falcon', chatRequest({ messages: count.messages }), {
      onEvent: (e) => e.type === 'delta' && events.push(e.text),
    });
    expect(events.join('')).toBe(count.greedy_text);
    expect(result.choices).toEqual([{ text: count.greedy_text, finishReason: 'stop' }]);
    expect(result.usage).toMatchObject({
      promptTokens: count.input_ids.length,
      completionTokens: count.greedy_ids.length,
    });
  });

  it('carries function tools, calls and results through the typed interface (the Responses API forwards no body)', async () => {
    const tools = [responsesTool(GET_WEATHER, true)];
    const request = { input: 'What is the weather in Paris?', tools, tool_choice: 'required' as const, temperature: 0 };
    // The output items, without their ids (minted anew by each side).
    const items = (response: OpenAI.Responses.Response) =>
      response.output.map((item) => ({ ...item, id: '…', ...(item.type === 'function_call' && { call_id: '…' }) }));
    const ours = await client.responses.create({ model: 'far-falcon', ...request });
    const theirs = await direct.responses.create({ model: 'crimson-falcon-4', ...request });
    expect(items(ours)).toEqual(items(theirs));
    expect(ours.output[0]).toMatchObject({ type: 'function_call', name: 'get_weather' });

    const events = [];
    for await (const event of await client.responses.create({ model: 'far-falcon', ...request, stream: true })) {
      events.push(event.type);
    }
    expect(events).toContain('response.function_call_arguments.delta');
    expect(events.slice(-3)).toEqual([
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);

    // The call's output continues the kept conversation: the server gets the call and its result.
    const call = ours.output[0] as OpenAI.Responses.ResponseFunctionToolCall;
    const output = '{"temperature": 18, "condition": "sunny"}';
    const answer = await client.responses.create({
      model: 'far-falcon',
      previous_response_id: ours.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output }],
      tools,
      temperature: 0,
    });
    const received = await upstream.waitFor('request', (m) => JSON.stringify(m.body).includes(call.call_id));
    expect((received.body as { messages: unknown[] }).messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: call.call_id, type: 'function', function: { name: call.name, arguments: call.arguments } }],
      },
      { role: 'tool', tool_call_id: call.call_id, content: output },
    ]);
    const theirAnswer = await direct.responses.create({
      model: 'crimson-falcon-4',
      input: [
        { role: 'user', content: request.input },
        { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
        { type: 'function_call_output', call_id: call.call_id, output },
      ],
      tools,
      temperature: 0,
    });
    expect(answer.output_text).toBe(theirAnswer.output_text);
  });

  it("answers the Responses API from the server, the text format enforced there: the server's own JSON", async () => {
    const content = 'What is the weather? Answer in JSON.';
    const ours = await client.responses.create({
      model: 'far-falcon',
      input: content,
      temperature: 0,
      max_output_tokens: 40,
      text: { format: { type: 'json_schema', name: 'weather', schema: weather, strict: true } },
      store: false,
    });
    const theirs = await direct.chat.completions.create({
      model: 'crimson-falcon-4',
      messages: [{ role: 'user', content }],
      temperature: 0,
      max_tokens: 40,
      response_format: { type: 'json_schema', json_schema: { name: 'weather', schema: weather, strict: true } },
    });
    expect(ours.output_text).toBe(theirs.choices[0]!.message.content);
    expect(JSON.parse(ours.output_text)).toMatchObject({ city: expect.any(String), raining: expect.any(Boolean) });
    expect(ours.model).toBe('far-falcon');
    expect(ours.usage!.input_tokens).toBe(theirs.usage!.prompt_tokens);
  });

  it("answers completions from the server's own /v1/completions: text, log probabilities and streams as it gives them", async () => {
    const request = { prompt: 'Once upon a time', temperature: 0, max_tokens: 12, logprobs: 2 };
    const ours = await client.completions.create({ model: 'far-falcon', ...request });
    const theirs = await direct.completions.create({ model: 'crimson-falcon-4', ...request });
    expect(ours.choices[0]!.text).toBe(theirs.choices[0]!.text);
    expect(ours.choices[0]!.finish_reason).toBe(theirs.choices[0]!.finish_reason);
    expect(ours.choices[0]!.logprobs!.tokens).toEqual(theirs.choices[0]!.logprobs!.tokens);
    expect(ours.choices[0]!.logprobs!.token_logprobs).toEqual(theirs.choices[0]!.logprobs!.token_logprobs);
    expect(ours.choices[0]!.logprobs!.top_logprobs).toEqual(theirs.choices[0]!.logprobs!.top_logprobs);
    expect(ours.usage).toEqual(theirs.usage);

    let streamed = '';
    for await (const chunk of await client.completions.create({ model: 'far-falcon', ...request, stream: true })) {
      streamed += chunk.choices[0]?.text ?? '';
    }
    expect(streamed).toBe(theirs.choices[0]!.text);
  });

  it.skipIf(!HAS_STORIES_260K)('streams stories260K from the server as it streams it directly', async () => {
    const request = {
      messages: [{ role: 'user' as const, content: 'Once upon a time' }],
      temperature: 0,
      max_tokens: 40,
    };
    const ours = await client.chat.completions.create({ model: 'far-stories', ...request });
    const theirs = await direct.chat.completions.create({ model: 'stories-260k', ...request });
    expect(ours.choices[0]!.message.content).toBe(theirs.choices[0]!.message.content);
    expect(ours.usage).toEqual(theirs.usage);
  });
});

describe('streaming without buffering', () => {
  it('hands each chunk to the client before the server sends the next', async () => {
    // The server sends one event, then waits for a word from this test; the test gives it only once the chunk has
    // come out of the SDK at the other end. Any buffering on the way (Lantern's, or the route's) would leave the
    // chunk inside, and the server waiting for ever: the wait below would fail instead.
    const sentBefore: number[] = [];
    const stuck = (what: string) => new Promise<string>((resolve) => setTimeout(() => resolve(what), 20_000));
    const stream = await Promise.race([
      client.chat.completions.create({ model: 'paced-falcon', messages: count.messages, temperature: 0, stream: true }),
      stuck('the first chunk never came out'),
    ]);
    if (typeof stream === 'string') throw new Error(stream);
    const chunks = stream[Symbol.asyncIterator]();
    for (let received = 0; ; received++) {
      if (received > 0) gated.next();
      const next = await Promise.race([
        chunks.next(),
        gated.waitFor('sent', (m) => m.event === received + 1).then(() => 'the server sent the next one first'),
        stuck('nothing came out within 20 s'),
      ]);
      if (typeof next === 'string') throw new Error(`Chunk ${received}: ${next}.`);
      if (next.done) break;
      await gated.waitFor('sent', (m) => m.event === received);
      sentBefore.push(gated.messages.filter((m) => m.type === 'sent').length);
    }
    // Chunk k reached the client when the server had sent k + 1 events: it, and those before it.
    expect(sentBefore.length).toBeGreaterThan(10);
    expect(sentBefore).toEqual(sentBefore.map((_, k) => k + 1));
  });
});

describe('embeddings', () => {
  const input = ['a lantern in the rain', 'a cat on a mat'];

  it("answers float and base64 as the server does, and the SDK's default decodes to the same numbers", async () => {
    const asFloat = await client.embeddings.create({ model: 'far-mole', input, encoding_format: 'float' });
    const theirs = await direct.embeddings.create({ model: 'jade-mole-4', input, encoding_format: 'float' });
    expect(asFloat.model).toBe('far-mole');
    expect(normalized(asFloat)).toEqual(normalized(theirs));

    const asBase64 = await client.embeddings.create({ model: 'far-mole', input, encoding_format: 'base64' });
    const theirBase64 = await direct.embeddings.create({ model: 'jade-mole-4', input, encoding_format: 'base64' });
    expect(typeof asBase64.data[0]!.embedding).toBe('string');
    expect(normalized(asBase64)).toEqual(normalized(theirBase64));

    const byDefault = await client.embeddings.create({ model: 'far-mole', input });
    expect(byDefault.data.map((d) => Array.from(d.embedding))).toEqual(asFloat.data.map((d) => d.embedding));
  });

  it('gives the client the encoding it asked for, from a server that only answers floats', async () => {
    const floats = await client.embeddings.create({ model: 'floats-mole', input, encoding_format: 'float' });
    const base64 = await client.embeddings.create({ model: 'floats-mole', input, encoding_format: 'base64' });
    expect(typeof base64.data[0]!.embedding).toBe('string');
    const byDefault = await client.embeddings.create({ model: 'floats-mole', input }); // base64, decoded by the SDK
    expect(byDefault.data.map((d) => Array.from(d.embedding))).toEqual(floats.data.map((d) => d.embedding));
  });
});

describe('speech to text', () => {
  const clip = () => toFile(readFileSync('test/fixtures/speech/two-phrases.wav'), 'two-phrases.wav');

  it("sends the audio as multipart to the server's own route, and writes the client's format from its segments", async () => {
    const request = {
      response_format: 'verbose_json' as const,
      timestamp_granularities: ['segment' as const, 'word' as const],
    };
    const { data: ours, response } = await client.audio.transcriptions
      .create({ file: await clip(), model: 'far-finch', ...request })
      .withResponse();
    const theirs = await direct.audio.transcriptions.create({ file: await clip(), model: 'teal-finch-4', ...request });
    expect(response.headers.get('x-lantern-backend')).toBe('remote:6'); // the profile's sixth server candidate
    expect(ours).toMatchObject({ task: 'transcribe', language: 'english', duration: theirs.duration });
    // The same fields; the words each within what was said, since this clip falls back to sampled decoding (the
    // fixture's log probability is low on it), which differs from run to run.
    expect(Object.keys(ours).sort()).toEqual(Object.keys(theirs).sort());
    const spoken = speechClip('two-phrases.wav').text;
    for (const answer of [ours, theirs]) {
      expect(wordErrors(spoken, answer.text).errors, answer.text).toBeLessThanOrEqual(clipAllowance(spoken));
    }
    const srt = await client.audio.transcriptions.create({
      file: await clip(),
      model: 'far-finch',
      response_format: 'srt',
    });
    expect(srt).toMatch(/^1\n\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}\n.+\n\n/);
  });
});

describe('text to speech', () => {
  it("streams the server's audio bytes as it sends them, in the client's format, and its SSE from them", async () => {
    const request = { input: 'The red fox runs. Open the door.', voice: 'nova', response_format: 'wav' } as const;
    const ours = await client.audio.speech.create({ ...request, model: 'far-lark' });
    const theirs = await direct.audio.speech.create({ ...request, model: 'ochre-lark-4' });
    expect(ours.headers.get('x-lantern-backend')).toBe('remote:7');
    expect(ours.headers.get('content-type')).toBe('audio/wav');
    const bytes = new Uint8Array(await ours.arrayBuffer());
    expect(bytes).toEqual(new Uint8Array(await theirs.arrayBuffer()));
    const sse = await client.audio.speech.create({ ...request, model: 'far-lark', stream_format: 'sse' });
    const events = (await sse.text())
      .split('\n\n')
      .filter((frame) => frame.startsWith('data: '))
      .map((frame) => JSON.parse(frame.slice(6)) as { type: string; audio?: string });
    const deltas = events.filter((e) => e.type === 'speech.audio.delta');
    expect(new Uint8Array(Buffer.concat(deltas.map((e) => Buffer.from(e.audio!, 'base64'))))).toEqual(bytes);
    expect(events.at(-1)!.type).toBe('speech.audio.done');
  });
});

describe('models', () => {
  it('lists each ID with its chain and the candidate that answers it', async () => {
    const models = [];
    for await (const model of client.models.list()) models.push(model);
    const falcon = models.find((m) => m.id === 'far-falcon') as unknown as Record<string, unknown>;
    // That a server answers it, not where the server is or its name for the model.
    expect(falcon).toMatchObject({ object: 'model', created: 7, candidates: ['remote:1'], served_by: 'remote:1' });
    expect(models.map((m) => m.id)).toEqual([
      'far-falcon',
      'far-mole',
      'far-stories',
      'paced-falcon',
      'floats-mole',
      'far-finch',
      'far-lark',
    ]);
  });
});
