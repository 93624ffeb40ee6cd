import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createOpenAI } from '@ai-sdk/openai';
import { HumanMessage } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import { generateText, streamText } from 'ai';
import type OpenAI from 'openai';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdkRefusal } from './support/api-error.ts';
import { BUNDLED_MODELS, sdkClient, type SdkClient } from './support/lantern.ts';
import { modelCopy } from './support/model-copy.ts';

/**
 * Images in, on the device: the bundled tiny-vision (a LLaVA-layout model trained on images it draws:
 * scripts/fixtures/vision_fixture.py) answers questions about images it was never shown — colour and shape pairs it
 * never saw together, at new places, sizes and combinations, asked in wordings it was never trained on
 * (test/fixtures/vision/manifest.json: the fixture's HELD templates and reserved synonyms) — through the openai
 * SDK, the AI SDK and LangChain, on the chat ID whose chain has it (`crimson-falcon-4`: text alone goes to tiny-chat).
 */
const FIXTURES = new URL('./fixtures/vision/', import.meta.url);
const MODEL = 'crimson-falcon-4';

type Part = { type: 'image' } | { type: 'text'; text: string };
interface Held {
  file: string;
  kind: 'single' | 'two' | 'tool';
  /** A single question's kind: shape, colour (of a shape), count, word, describe, exists. */
  question?: string;
  messages: (
    | { role: 'user'; content: Part[] | string }
    | { role: 'assistant'; content: string; tool_calls?: { name: string; arguments: unknown }[] }
    | { role: 'tool'; content: string }
  )[];
  tools?: OpenAI.ChatCompletionTool[];
  answer: string;
}
const manifest = JSON.parse(readFileSync(new URL('manifest.json', FIXTURES), 'utf8')) as Held[];
const reference = JSON.parse(readFileSync(`${BUNDLED_MODELS}/tiny-vision/reference.json`, 'utf8')) as {
  held_out_right: Record<string, number>;
  pytorch_answers: { file: string; answer: string }[];
};

const dataUrl = (file: string) => `data:image/png;base64,${readFileSync(new URL(file, FIXTURES)).toString('base64')}`;

/** A held-out conversation as an app sends it: its image as a data URL where the manifest places it. */
function wireMessages(held: Held): OpenAI.ChatCompletionMessageParam[] {
  const url = dataUrl(held.file);
  return held.messages.map((m): OpenAI.ChatCompletionMessageParam => {
    if (m.role === 'tool') return { role: 'tool', tool_call_id: 'call_0', content: m.content };
    if (m.role === 'assistant') {
      if (!m.tool_calls) return { role: 'assistant', content: m.content };
      const calls = m.tool_calls.map((call, i) => ({
        id: `call_${i}`,
        type: 'function' as const,
        function: { name: call.name, arguments: JSON.stringify(call.arguments) },
      }));
      return { role: 'assistant', content: m.content || null, tool_calls: calls };
    }
    if (typeof m.content === 'string') return { role: 'user', content: m.content };
    return {
      role: 'user',
      content: m.content.map((p) =>
        p.type === 'image' ? { type: 'image_url', image_url: { url } } : { type: 'text', text: p.text },
      ),
    };
  });
}

/** The call a tool answer is, as the fixture writes it (`<tool_call>\n{…}\n</tool_call>`), or undefined. */
function expectedCall(answer: string): { name: string; arguments: unknown } | undefined {
  const match = /^<tool_call>\n(.*)\n<\/tool_call>$/s.exec(answer);
  return match ? (JSON.parse(match[1]!) as { name: string; arguments: unknown }) : undefined;
}

/** What Lantern answered, in the fixture's terms: the text, or the call it made. */
function answered(choice: OpenAI.ChatCompletion.Choice): string | { name: string; arguments: unknown } {
  const call = choice.message.tool_calls?.[0];
  if (call?.type === 'function') return { name: call.function.name, arguments: JSON.parse(call.function.arguments) };
  return (choice.message.content ?? '').trim();
}

const expected = (answer: string) => expectedCall(answer) ?? answer;

let lantern: SdkClient;
beforeAll(async () => {
  // Over a hundred requests a minute from one key: above the default rate limit.
  lantern = await sdkClient({
    handler: { onServerError: () => {}, rateLimits: { requestsPerMinute: 1e6 } },
    client: { maxRetries: 0 },
  });
});

async function ask(held: Held, client: OpenAI = lantern.client) {
  return client.chat.completions.create({
    model: MODEL,
    messages: wireMessages(held),
    ...(held.tools && { tools: held.tools }),
    temperature: 0,
    max_tokens: 48,
  });
}

describe('held-out images, through the openai SDK', () => {
  // The committed weights answer 73 of the 80 in PyTorch (91.3%): 19 of 20 shape questions, 18 of 20 colour questions
  // (issue 48 asks 90% of each), all counts and words, 8 of 10 yes/no and descriptions.
  it('answers at least 90% of the held-out questions exactly (images and wordings it never saw)', async () => {
    const singles = manifest.filter((m) => m.kind === 'single');
    const right: Record<string, number> = {};
    const wrong: string[] = [];
    for (const held of singles) {
      const got = answered((await ask(held)).choices[0]!);
      for (const kind of ['single', held.question!]) right[kind] = (right[kind] ?? 0) + (got === held.answer ? 1 : 0);
      if (got !== held.answer) wrong.push(`${held.file}: ${JSON.stringify(got)} for ${held.answer}`);
    }
    console.log(`tiny-vision held-out: ${right.single}/${singles.length} right through Lantern`, right, wrong);
    expect(right.single! / singles.length).toBeGreaterThanOrEqual(0.9);
    const shapes = singles.filter((m) => m.question === 'shape').length;
    expect((right.shape ?? 0) / shapes).toBeGreaterThanOrEqual(0.9);
    const colours = singles.filter((m) => m.question === 'colour').length;
    expect((right.colour ?? 0) / colours).toBeGreaterThanOrEqual(0.9);
    // Each kind as PyTorch answered it from the weights before export, within one answer.
    for (const kind of Object.keys(right)) {
      expect(Math.abs(right[kind]! - reference.held_out_right[kind]!), kind).toBeLessThanOrEqual(1);
    }
  });

  it("gives PyTorch's own greedy answers (the export and Lantern's image placement are faithful)", async () => {
    for (const { file, answer } of reference.pytorch_answers) {
      const held = manifest.find((m) => m.file === file)!;
      expect(answered((await ask(held)).choices[0]!), file).toEqual(expected(answer));
    }
  });

  it('a second question in a later turn is about the same image, and its prefix, image included, is reused', async () => {
    const twos = manifest.filter((m) => m.kind === 'two');
    let right = 0;
    for (const held of twos) {
      // The first turn alone, then the conversation with its answer: the second reuses the first's keys and values.
      const first = await ask({ ...held, messages: held.messages.slice(0, 1) });
      const second = await ask(held);
      expect(second.usage!.prompt_tokens_details?.cached_tokens ?? 0).toBeGreaterThanOrEqual(
        first.usage!.prompt_tokens - 1,
      );
      if (answered(second.choices[0]!) === held.answer) right++;
    }
    // All 12 in PyTorch.
    expect(right).toBeGreaterThanOrEqual(reference.held_out_right.two! - 1);
  });

  it('the same words about another image reuse nothing from the image on: it answers for the new image', async () => {
    // Two held-out images asked the same question, with different answers.
    const singles = manifest.filter((m) => m.kind === 'single');
    const text = (m: Held) => JSON.stringify(m.messages);
    const [a, b] = singles
      .flatMap((x) => singles.filter((y) => y !== x && text(y) === text(x) && y.answer !== x.answer).map((y) => [x, y]))
      .at(0)!;
    // On an engine of its own: a first image, then the second one with the same words.
    const { client } = await sdkClient({ client: { maxRetries: 0 } });
    const first = await ask(a!, client);
    const second = await ask(b!, client);
    // The prompt up to the image is shared (the template's first tokens); none of the image's positions is.
    expect(second.usage!.prompt_tokens_details?.cached_tokens ?? 0).toBeLessThan(first.usage!.prompt_tokens - 16);
    // What an engine that never saw the first image answers (this file's, which has not seen it before either).
    expect(answered(second.choices[0]!)).toEqual(answered((await ask(b!)).choices[0]!));
  });

  it('calls a declared tool with what it sees, and answers from its result', async () => {
    const tools = manifest.filter((m) => m.kind === 'tool');
    let right = 0;
    for (const held of tools) {
      const got = answered((await ask(held)).choices[0]!);
      if (JSON.stringify(got) === JSON.stringify(expected(held.answer))) right++;
    }
    // All 12 in PyTorch.
    expect(right).toBeGreaterThanOrEqual(reference.held_out_right.tool! - 1);
  });

  it('requests with images sent at once are batched and answered as each is alone', async () => {
    // Four: a key's limit of generations at once.
    const some = manifest.filter((m) => m.kind !== 'two').slice(0, 4);
    const alone = [];
    for (const held of some) alone.push(answered((await ask(held)).choices[0]!));
    // On an engine of their own, so that no image of theirs is in its prefix cache yet.
    const fresh = await sdkClient({ client: { maxRetries: 0 } });
    const together = await Promise.all(some.map(async (held) => answered((await ask(held, fresh.client)).choices[0]!)));
    expect(together).toEqual(alone);
  });

  it('streams an answer about an image', async () => {
    const held = manifest.find((m) => m.kind === 'single' && reference.pytorch_answers.some((r) => r.file === m.file))!;
    const stream = await lantern.client.chat.completions.create({
      model: MODEL,
      messages: wireMessages(held),
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      usage ??= chunk.usage;
    }
    expect(text).toBe(reference.pytorch_answers.find((r) => r.file === held.file)!.answer);
    // An image counts as the positions its features take in the prompt (16 for tiny-vision).
    expect(usage!.prompt_tokens).toBeGreaterThan(16);
  });

  it('the Responses API reads input_image', async () => {
    const held = manifest.find((m) => m.kind === 'single')!;
    const parts = held.messages[0]!.content as Part[];
    const response = await lantern.client.responses.create({
      model: MODEL,
      temperature: 0,
      input: [
        {
          role: 'user',
          content: parts.map((p) =>
            p.type === 'image'
              ? { type: 'input_image' as const, image_url: dataUrl(held.file), detail: 'auto' as const }
              : { type: 'input_text' as const, text: p.text },
          ),
        },
      ],
    });
    expect(response.output_text.trim()).toBe(answered((await ask(held)).choices[0]!));
  });
});

describe("a LLaVA model whose chat template is its language model's (text alone)", () => {
  it('gets the image token where each image was, and answers as with its own template', async () => {
    // tiny-vision with tiny-chat's template, which renders a turn's content as text: Lantern writes `<image>\n` there.
    const template = JSON.parse(readFileSync(`${BUNDLED_MODELS}/tiny-chat/tokenizer_config.json`, 'utf8')) as {
      chat_template: string;
    };
    const folder = modelCopy('tiny-vision', {
      'tokenizer_config.json': (config) => ({ ...config, chat_template: template.chat_template }),
    });
    const candidates = [{ engine: 'transformers' as const, model: folder, device: 'cpu' as const, images: true }];
    const { client } = await sdkClient({
      profile: { textual: { task: 'chat', created: 0, candidates } },
      client: { maxRetries: 0 },
    });
    const held = manifest.find((m) => m.kind === 'single' && (m.messages[0]!.content as Part[])[0]!.type === 'image')!;
    const own = answered((await ask(held)).choices[0]!);
    const completion = await client.chat.completions.create({
      model: 'textual',
      messages: wireMessages(held),
      temperature: 0,
      max_tokens: 48,
    });
    expect(answered(completion.choices[0]!)).toEqual(own);
    // The same prompt, token for token: the image's 16 positions and the text around them.
    expect(completion.usage!.prompt_tokens).toBe((await ask(held)).usage!.prompt_tokens);
    // A user's `<image>` is text, Lantern's the image token (issue 63 #8): one image, read once.
    const [first, ...rest] = wireMessages(held) as { role: 'user'; content: OpenAI.ChatCompletionContentPart[] }[];
    const spelled = await client.chat.completions.create({
      model: 'textual',
      messages: [{ ...first!, content: [...first!.content, { type: 'text', text: ' <image>' }] }, ...rest],
      temperature: 0,
      max_tokens: 1,
    });
    expect(spelled.usage!.prompt_tokens).toBeGreaterThan(completion.usage!.prompt_tokens);
  });
});

describe('other clients', () => {
  const BASE = 'http://lantern.test/v1';
  const fetchVia = (url: string | URL | Request, init?: RequestInit) => lantern.handler(new Request(url, init));
  // A drawn image none of the held-out ones is: a red square, asked in held-out wordings (none trained on).
  let red: Buffer;
  beforeAll(async () => {
    red = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#f0f0f0' } })
      .composite([
        {
          input: await sharp({ create: { width: 20, height: 20, channels: 3, background: '#dc1e1e' } })
            .png()
            .toBuffer(),
          left: 30,
          top: 12,
        },
      ])
      .png()
      .toBuffer();
  });

  it("the AI SDK's image parts (bytes), in generateText and streamText", async () => {
    const openai = createOpenAI({ baseURL: BASE, apiKey: lantern.key, fetch: fetchVia });
    const messages = [
      {
        role: 'user' as const,
        content: [
          { type: 'image' as const, image: new Uint8Array(red), mediaType: 'image/png' },
          { type: 'text' as const, text: 'What shape appears in the picture?' },
        ],
      },
    ];
    const generated = await generateText({ model: openai.chat(MODEL), messages, temperature: 0 });
    expect(generated.text).toBe('A red square.');
    const streamed = streamText({ model: openai.chat(MODEL), messages, temperature: 0 });
    expect(await streamed.text).toBe('A red square.');
  });

  it("LangChain's image_url content blocks", async () => {
    const chat = new ChatOpenAI({
      model: MODEL,
      temperature: 0,
      apiKey: lantern.key,
      configuration: { baseURL: BASE, fetch: fetchVia },
    });
    const reply = await chat.invoke([
      new HumanMessage({
        content: [
          { type: 'image_url', image_url: { url: `data:image/png;base64,${red.toString('base64')}` } },
          { type: 'text', text: 'Can you tell the colour of the square?' },
        ],
      }),
    ]);
    expect(reply.content).toBe('Red.');
  });
});

describe('images that cannot be read', () => {
  let server: Server;
  let port = 0;
  const hits: string[] = [];
  beforeAll(async () => {
    server = createServer((request, response) => {
      hits.push(request.url ?? '');
      if (request.url === '/red.png') {
        response.writeHead(200, { 'content-type': 'image/png' });
        response.end(readFileSync(new URL(manifest[0]!.file, FIXTURES)));
      } else {
        response.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  const withImage = (url: string) =>
    lantern.client.chat.completions.create({
      model: MODEL,
      temperature: 0,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What shape appears in the picture?' },
            { type: 'image_url', image_url: { url } },
          ],
        },
      ],
    });

  it('an image by http(s) URL is not fetched in Node unless the operator allows its host: a 400 naming the part', async () => {
    // Issue 41 (SSRF): the server would have fetched its own network for any key holder. test/image-input.test.ts
    // has the allowed hosts, the addresses refused after DNS, the redirects; src/inputs/image-input.test.ts, a page's.
    for (const path of ['/red.png', '/gone.png']) {
      const refusal = await sdkRefusal(withImage(`http://127.0.0.1:${port}${path}`));
      expect(refusal).toMatchObject({ status: 400, param: 'messages[0].content[1]' });
      expect(refusal.message).toMatch(/fetches no image URLs.*Send the image itself as a data URL/);
    }
    expect(hits).toEqual([]);
  });

  it('a PNG whose header is right and whose data is not is a 400 naming the part; the next request is answered', async () => {
    const png = readFileSync(new URL(manifest[0]!.file, FIXTURES));
    const broken = Buffer.concat([png.subarray(0, 33), Buffer.alloc(64, 7)]);
    const refusal = await sdkRefusal(withImage(`data:image/png;base64,${broken.toString('base64')}`));
    expect(refusal).toMatchObject({ status: 400, param: 'messages[0].content[1]' });
    expect(refusal.message).toMatch(/could not be decoded/);
    const next = await ask(manifest[0]!);
    expect(answered(next.choices[0]!)).toBeTruthy();
  });
});
