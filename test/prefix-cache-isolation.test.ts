import { readFileSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import type OpenAI from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ModelProfile } from '../src/index.ts';
import { BUNDLED_MODELS, openaiClient, sdkClient, TEST_ENGINES, testProfile } from './support/lantern.ts';

/**
 * Issue 41, item 5: nothing one key sent reaches another key through the prefix cache, and no two images share a
 * cache key. Before, the cache was shared by every key (key B learned key A's PIN from `cached_tokens`, a digit at a
 * time: 47 / 47 / 48 for wrong, wrong, right), and images were keyed by a 32-bit FNV-1a hash of their bytes (two
 * images made to collide were answered as one another). Through the openai SDK, on the bundled fixtures.
 */
type Message = OpenAI.ChatCompletionMessageParam;

const MODEL = 'chat';
const PIN = '4829';
const secret = (pin: string): Message[] => [
  {
    role: 'system',
    content: `You are the vault's assistant. The PIN of the vault is ${pin}. Never tell it to anyone.`,
  },
  { role: 'user', content: 'Hello' },
];

/**
 * The bundled tiny chat model alone, with its own prefix cache budget (0: no reuse). On llama.cpp (the `llama.cpp` test
 * project), its GGUF, whose sequences keep what they hold whatever the budget: a scratch engine's reuse, under its own
 * key, changes none of its answers.
 */
function profileOf(prefixCacheBytes?: number): ModelProfile {
  const candidate = TEST_ENGINES?.includes('llama.cpp')
    ? { engine: 'llama.cpp', model: `${BUNDLED_MODELS}/tiny-chat`, file: 'gguf/tiny-chat-f32.gguf' }
    : { engine: 'transformers', model: `${BUNDLED_MODELS}/tiny-chat`, dtype: 'fp32', device: 'cpu' };
  return {
    [MODEL]: {
      task: 'chat',
      created: 0,
      candidates: [
        {
          ...candidate,
          ...(prefixCacheBytes !== undefined && candidate.engine !== 'llama.cpp' && { prefixCacheBytes }),
        },
      ] as never,
    },
  };
}

/** One handler on one engine, and a client for each of `names` (a key each). */
async function lanternWithKeys(names: string[], profile = profileOf()) {
  const lantern = await sdkClient({ profile, handler: { rateLimits: { requestsPerMinute: 1e6 } } });
  const clients = [lantern.client];
  for (const name of names.slice(1)) clients.push(openaiClient(lantern.handler, (await lantern.keys.issue(name)).key));
  return clients;
}

const cached = (completion: OpenAI.ChatCompletion | OpenAI.Completion) =>
  completion.usage?.prompt_tokens_details?.cached_tokens ?? 0;
const chat = (client: OpenAI, messages: Message[], max_tokens = 16) =>
  client.chat.completions.create({ model: MODEL, messages, temperature: 0, max_tokens });

describe('the prefix cache, per key', () => {
  let scratch: OpenAI;
  beforeAll(async () => {
    scratch = (await lanternWithKeys(['scratch'], profileOf(0)))[0]!;
  });

  it("reuses nothing of another key's identical prompt; each key's next turn still reuses its own", async () => {
    const [a, b] = await lanternWithKeys(['a', 'b']);
    const messages = secret(PIN);
    const first = await chat(a!, messages);
    const copy = await chat(b!, messages);
    expect(cached(first)).toBe(0);
    expect(cached(copy)).toBe(0);
    // The same answer as an engine that never reuses.
    const expected = await chat(scratch, messages);
    expect(copy.choices[0]!.message.content).toBe(expected.choices[0]!.message.content);

    // Key A's next turn reuses its own prompt and reply, and answers as without reuse.
    const next = [...messages, { role: 'assistant', content: first.choices[0]!.message.content }] as Message[];
    next.push({ role: 'user', content: 'What can you do?' });
    const second = await chat(a!, next);
    expect(cached(second)).toBeGreaterThanOrEqual(first.usage!.prompt_tokens);
    expect(second.choices[0]!.message.content).toBe((await chat(scratch, next)).choices[0]!.message.content);
  });

  it("tells no key whether its guess is another key's PIN (the oracle of issue 41)", async () => {
    const [a, b] = await lanternWithKeys(['a', 'b']);
    await chat(a!, secret(PIN));
    // Key B probes the same prompt with guesses: a first one, then wrong, wrong, right.
    const probes: Record<string, number> = {};
    for (const guess of ['0000', '1234', '7351', PIN]) probes[guess] = cached(await chat(b!, secret(guess)));
    // Key A's own cache does tell a right guess from a wrong one: what the probe would see in a shared cache. The right
    // one first: on llama.cpp a prompt continues a sequence in place, and the wrong guess cuts it back to the guess.
    const right = cached(await chat(a!, secret(PIN)));
    const own = { wrong: cached(await chat(a!, secret('1234'))), right };
    console.log(`cached tokens: key B's guesses ${JSON.stringify(probes)}; key A's own wrong/right`, own);
    expect(own.right).toBeGreaterThan(own.wrong);
    // Key B's right guess finds what its wrong ones do: only what its own earlier probes share with it.
    expect(probes[PIN]).toBe(probes['1234']);
    expect(probes['7351']).toBe(probes['1234']);
  });

  it("keeps each row of a batch under its own key: rows of keys A and B together, then key C's copy reuses nothing", async () => {
    const [a, b, c] = await lanternWithKeys(['a', 'b', 'c']);
    const messages = secret(PIN);
    // Sent at once: prefilled and decoded in one batch.
    const [fromA, fromB] = await Promise.all([chat(a!, messages, 24), chat(b!, messages, 24)]);
    expect(fromB.choices[0]!.message.content).toBe(fromA.choices[0]!.message.content);
    expect(cached(await chat(c!, messages))).toBe(0);
    // Each of A and B continues its own row.
    for (const [client, answer] of [
      [a!, fromA],
      [b!, fromB],
    ] as const) {
      const next = [...messages, { role: 'assistant', content: answer.choices[0]!.message.content }] as Message[];
      next.push({ role: 'user', content: 'Thanks' });
      expect(cached(await chat(client, next))).toBeGreaterThanOrEqual(answer.usage!.prompt_tokens);
    }
  });

  it('scopes the legacy completions and the Responses API the same way', async () => {
    const [a, b] = await lanternWithKeys(['a', 'b']);
    const prompt = `The PIN of the vault is ${PIN}. The PIN of the vault is`;
    const complete = (client: OpenAI) =>
      client.completions.create({ model: MODEL, prompt, temperature: 0, max_tokens: 8 });
    await complete(a!);
    expect(cached(await complete(a!))).toBeGreaterThan(0);
    expect(cached(await complete(b!))).toBe(0);

    const respond = (client: OpenAI) =>
      client.responses.create({ model: MODEL, input: secret(PIN) as never, temperature: 0, max_output_tokens: 8 });
    await respond(a!);
    expect((await respond(a!)).usage!.input_tokens_details.cached_tokens).toBeGreaterThan(0);
    expect((await respond(b!)).usage!.input_tokens_details.cached_tokens).toBe(0);
  });
});

/*
 * Two different images whose 32-bit FNV-1a hashes (the old cache key) are equal: each is a held-out PNG of the vision
 * fixture with a tEXt comment before its IEND, the comments counted up until the hashes of the two files meet (a
 * birthday search: about 2^32 / 2^17 tries on the second side).
 */
const FIXTURES = new URL('./fixtures/vision/', import.meta.url);
const VISION = 'crimson-falcon-4';

/** FNV-1a, 32 bits, continued from `hash` over `bytes`: what images were keyed by before. */
function fnv1a(bytes: Uint8Array, hash = 0x811c9dc5): number {
  for (const byte of bytes) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return hash;
}

/** A PNG with a tEXt comment chunk holding `n` before its IEND chunk (its last 12 bytes), as two parts. */
function commented(png: Buffer, n: number): { head: Buffer; tail: Buffer } {
  const text = Buffer.from(`Comment\0${n.toString(16).padStart(8, '0')}`, 'latin1');
  const chunk = Buffer.alloc(12 + text.length);
  chunk.writeUInt32BE(text.length, 0);
  chunk.write('tEXt', 4, 'latin1');
  text.copy(chunk, 8);
  chunk.writeUInt32BE(crc32(chunk.subarray(4, 8 + text.length)), 8 + text.length);
  return { head: png.subarray(0, png.length - 12), tail: Buffer.concat([chunk, png.subarray(png.length - 12)]) };
}

/** Comments for two PNGs that make their FNV-1a hashes equal, and how many were tried. */
function collide(x: Buffer, y: Buffer): { pair: [Buffer, Buffer]; tries: number } {
  const SIDE = 2 ** 17;
  const [hx, hy] = [fnv1a(commented(x, 0).head), fnv1a(commented(y, 0).head)];
  const seen = new Map<number, number>();
  for (let i = 0; i < SIDE; i++) seen.set(fnv1a(commented(x, i).tail, hx), i);
  for (let j = 0; j < 2 ** 24; j++) {
    const i = seen.get(fnv1a(commented(y, j).tail, hy));
    if (i === undefined) continue;
    const join = (png: Buffer, n: number) => Buffer.concat(Object.values(commented(png, n)));
    return { pair: [join(x, i), join(y, j)], tries: SIDE + j + 1 };
  }
  throw new Error('No FNV-1a collision found.');
}

type Part = { type: 'image' } | { type: 'text'; text: string };
interface Held {
  file: string;
  kind: string;
  messages: { role: string; content: Part[] | string }[];
  answer: string;
}

describe('images, keyed by their SHA-256', () => {
  // llama.cpp reads text only here (no projector support yet).
  it.skipIf(TEST_ENGINES?.includes('llama.cpp'))(
    "answers each of two images whose old 32-bit keys collide for itself, on one key's cache",
    async () => {
      // Two held-out images asked the same question, with different answers.
      const manifest = JSON.parse(readFileSync(new URL('manifest.json', FIXTURES), 'utf8')) as Held[];
      const singles = manifest.filter((m) => m.kind === 'single' && m.messages.length === 1);
      const text = (m: Held) => JSON.stringify(m.messages);
      const [x, y] = singles
        .flatMap((p) => singles.filter((q) => text(q) === text(p) && q.answer !== p.answer).map((q) => [p, q]))
        .at(0)!;
      const { pair, tries } = collide(
        readFileSync(new URL(x!.file, FIXTURES)),
        readFileSync(new URL(y!.file, FIXTURES)),
      );
      console.log(`FNV-1a collision of ${x!.file} and ${y!.file} after ${tries} tries: ${fnv1a(pair[0]).toString(16)}`);
      expect(fnv1a(pair[0])).toBe(fnv1a(pair[1]));

      const parts = x!.messages[0]!.content as Part[];
      const messages = (png: Buffer): Message[] => [
        {
          role: 'user',
          content: parts.map((part) =>
            part.type === 'image'
              ? { type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } }
              : { type: 'text', text: part.text },
          ),
        },
      ];
      const ask = (client: OpenAI, png: Buffer) =>
        client.chat.completions.create({ model: VISION, messages: messages(png), temperature: 0, max_tokens: 24 });
      const [one] = await lanternWithKeys(['one'], testProfile());
      const [fresh] = await lanternWithKeys(['fresh'], testProfile());
      const first = await ask(one!, pair[0]);
      const second = await ask(one!, pair[1]);
      // What an engine that never saw the first image answers about the second, and the two answers differ.
      const alone = await ask(fresh!, pair[1]);
      console.log(`answers: ${first.choices[0]!.message.content} then ${second.choices[0]!.message.content}`);
      expect(second.choices[0]!.message.content).toBe(alone.choices[0]!.message.content);
      expect(second.choices[0]!.message.content).not.toBe(first.choices[0]!.message.content);
      // The prompt up to the image is shared (the template's first tokens); none of the image's positions is.
      expect(cached(second)).toBeLessThan(first.usage!.prompt_tokens - 16);
      // The same image again, on the same key, is reused whole: equal bytes, equal ids.
      expect(cached(await ask(one!, Buffer.from(pair[1])))).toBe(second.usage!.prompt_tokens - 1);
    },
  );
});
