import { toFile, type OpenAI } from 'openai';

/*
 * The mix of requests of issue 42's memory soaks, shared by Node (test/memory-soak.test.ts) and the browser
 * (test/e2e/memory.spec.ts, through the harness page): plain data and the openai SDK, nothing of Node's or a
 * browser's own. Each kind is one request an app makes (Responses: one stored, continued or not, read back and
 * deleted), in rounds of twenty. Most prompts carry the request's number, so the engines see new text every time, as
 * they would from people; plain chat and images repeat a few questions, greedily, as an app asking the same thing does.
 */

/** The kinds of request. */
export const SOAK_KINDS = [
  'chat',
  'stream',
  'aborted stream',
  'json_schema',
  'tools',
  'image',
  'audio',
  'embeddings',
  'responses',
] as const;
export type SoakKind = (typeof SOAK_KINDS)[number];

/**
 * API keys a soak is sent with: two per kind of request, each kind from apps of its own. At about ten requests a
 * second, no key comes near its default 120 requests a minute or four at once (an aborted stream holds its slot a
 * moment after its client left), so the soaks run under the handler's default limits.
 */
export const SOAK_KEYS = 2 * SOAK_KINDS.length;

/**
 * One round of twenty requests, taken in turn: fifty rounds make the 1,000. A transcription is one in twenty, as it
 * costs twenty times a short chat here (tiny-whisper encodes its whole 30-second window whatever the clip's length).
 */
const ROUND: readonly SoakKind[] = [
  'chat',
  'stream',
  'embeddings',
  'aborted stream',
  'json_schema',
  'tools',
  'image',
  'responses',
  'chat',
  'stream',
  'embeddings',
  'audio',
  'chat',
  'stream',
  'aborted stream',
  'json_schema',
  'tools',
  'image',
  'embeddings',
  'responses',
];

/** What the soak sends that it cannot make up: images (data URLs) and WAV clips (base64) the fixture models read. */
export interface SoakInputs {
  images: string[];
  clips: { name: string; base64: string }[];
}

/** A soak under way: `run(n)` sends requests until `n` have been sent in all, `concurrency` at a time. */
export interface Soak {
  run(until: number): Promise<void>;
  /** Requests sent so far, by kind. */
  counts: Partial<Record<SoakKind, number>>;
  /** HTTP requests sent so far (a Responses request is three or five). */
  calls: number;
  /** Milliseconds spent on each kind, all its requests together (concurrent ones each counted whole). */
  ms: Partial<Record<SoakKind, number>>;
  /** What went wrong, as `kind #n: message`; empty when every request was answered as expected. */
  failures: string[];
}

const MODEL = 'crimson-falcon-4';
const WEATHER = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Get the current weather in a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const ANSWER_SCHEMA = {
  type: 'object',
  properties: { even: { type: 'boolean' } },
  required: ['even'],
  additionalProperties: false,
};

const bytesOf = (base64: string) => Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));

/**
 * The soak's requests over `clients` (one per API key, {@link SOAK_KEYS} of them), with `inputs`. Every request checks
 * what an app would rely on (a reply, a valid JSON object, a vector); a failure is recorded, not thrown, and the soak
 * goes on.
 *
 * @example
 * const soak = soakPlan(clients, inputs, 4);
 * await soak.run(100); // measure
 * await soak.run(1000); // measure again
 */
export function soakPlan(clients: OpenAI[], inputs: SoakInputs, concurrency: number): Soak {
  const clips = inputs.clips.map(({ name, base64 }) => ({ name, bytes: bytesOf(base64) }));
  const soak: Soak = { counts: {}, calls: 0, ms: {}, failures: [], run };
  let next = 0;

  const requests: Record<SoakKind, (client: OpenAI, n: number) => Promise<unknown>> = {
    chat: async (client, n) => {
      soak.calls++;
      const completion = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: `Count to ${n % 10}.` }],
        // Greedy, as an app asking the same thing wants the same answer: a repeat's turn replaces its own in the cache.
        temperature: 0,
        max_tokens: 8,
      });
      expectThat(typeof completion.choices[0]?.message.content === 'string', 'a reply');
    },
    stream: async (client, n) => {
      soak.calls++;
      const stream = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: `Tell me a story about ${n}.` }],
        max_tokens: 8,
        stream: true,
        stream_options: { include_usage: true },
      });
      let usage = false;
      for await (const chunk of stream) usage ||= !!chunk.usage;
      expectThat(usage, 'a usage chunk');
    },
    'aborted stream': async (client, n) => {
      soak.calls++;
      const stream = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: `Tell me a long story, number ${n}.` }],
        max_tokens: 64,
        stream: true,
      });
      // Leaving the loop aborts the request: the generation stops in the engine, and its slot is given back.
      for await (const chunk of stream) if (chunk.choices[0]?.delta.content) break;
    },
    json_schema: async (client, n) => {
      soak.calls++;
      const completion = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: `Answer in JSON: is ${n} even?` }],
        max_tokens: 16,
        response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: ANSWER_SCHEMA, strict: true } },
      });
      const { message, finish_reason } = completion.choices[0]!;
      if (finish_reason === 'stop') expectThat(typeof JSON.parse(message.content!).even === 'boolean', 'the schema');
    },
    tools: async (client, n) => {
      soak.calls++;
      const cities = ['Paris', 'Tokyo', 'Lima', 'Oslo'];
      const completion = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: `What is the weather in ${cities[n % cities.length]}? (${n})` }],
        tools: [WEATHER],
        max_tokens: 16,
      });
      const { message } = completion.choices[0]!;
      expectThat(!!message.tool_calls?.length || typeof message.content === 'string', 'a call or a reply');
    },
    image: async (client, n) => {
      soak.calls++;
      const url = inputs.images[n % inputs.images.length]!;
      const completion = await client.chat.completions.create({
        model: MODEL,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'image_url', image_url: { url } },
              { type: 'text', text: 'Can you tell the colour of the shape?' },
            ],
          },
        ],
        temperature: 0,
        max_tokens: 8,
      });
      expectThat((completion.usage?.prompt_tokens ?? 0) > 16, 'the image in the prompt');
    },
    audio: async (client, n) => {
      soak.calls++;
      const { name, bytes } = clips[n % clips.length]!;
      const file = await toFile(bytes, name, { type: 'audio/wav' });
      const transcription = await client.audio.transcriptions.create({ file, model: 'whisper-1' });
      expectThat(typeof transcription.text === 'string', 'a transcript');
    },
    embeddings: async (client, n) => {
      soak.calls++;
      const response = await client.embeddings.create({ model: 'jade-mole-4', input: [`text ${n}`, 'another text'] });
      expectThat(response.data.length === 2 && response.data[0]!.embedding.length > 0, 'two vectors');
    },
    responses: async (client, n) => {
      soak.calls += 3;
      const input = `Hello, number ${n}.`;
      const first = await client.responses.create({ model: MODEL, input, store: true, max_output_tokens: 8 });
      let last = first;
      if (n % 2) {
        // Every other one is continued (`previous_response_id` reads it back from the store), and both are deleted.
        soak.calls += 2;
        last = await client.responses.create({
          model: MODEL,
          input: 'And then?',
          previous_response_id: first.id,
          store: true,
          max_output_tokens: 8,
        });
        await client.responses.delete(first.id);
      }
      expectThat((await client.responses.retrieve(last.id)).id === last.id, 'the stored response');
      await client.responses.delete(last.id);
    },
  };

  // Each kind from apps of its own (a chat app, a transcriber…): its share of `clients`, taken a round each in turn.
  const perKind = Math.max(1, Math.floor(clients.length / SOAK_KINDS.length));
  const clientOf = (kind: SoakKind, n: number) => {
    const round = Math.floor(n / ROUND.length);
    return clients[(SOAK_KINDS.indexOf(kind) + SOAK_KINDS.length * (round % perKind)) % clients.length]!;
  };

  async function run(until: number): Promise<void> {
    const worker = async () => {
      while (next < until) {
        const n = next++;
        const kind = ROUND[n % ROUND.length]!;
        soak.counts[kind] = (soak.counts[kind] ?? 0) + 1;
        const started = performance.now();
        try {
          await requests[kind](clientOf(kind, n), n);
        } catch (error) {
          soak.failures.push(`${kind} #${n}: ${(error as Error).message}`);
        }
        soak.ms[kind] = Math.round((soak.ms[kind] ?? 0) + performance.now() - started);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
  }
  return soak;
}

function expectThat(condition: boolean, what: string): void {
  if (!condition) throw new Error(`expected ${what}`);
}
