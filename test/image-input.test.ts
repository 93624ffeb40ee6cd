import { lookup } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type OpenAI from 'openai';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeImageAccess, openPinned } from '../src/inputs/node-image-access.ts';
import { bundledProfile, createEngine, type Engine, type Limits, type ModelProfile } from '../src/index.ts';
import { CLOSED_PORT } from './support/closed-port.ts';
import { sdkRefusal } from './support/api-error.ts';
import { BUNDLED_MODELS, sdkClient } from './support/lantern.ts';
import { lyingGif } from './support/lying-images.ts';

/**
 * Images in requests, on the wire (issue 28's first part): chat `image_url` parts (object and string forms) and
 * Responses `input_image` parts are read as OpenAI sends them, checked (where they may stand, their URL, a data URL's
 * type and size, how many), and routed to the candidates that read images: a server that does gets them again as
 * parts; an ID none of whose candidates does refuses them naming the part (the bundled profile's `amber-phoenix-4`,
 * whose chain has no vision model). Through the official openai SDK.
 */
const PNG = `data:image/png;base64,${Buffer.from('\x89PNG\r\n\x1a\n not really a png').toString('base64')}`;
const text = (t: string) => ({ type: 'text' as const, text: t });
const image = (url: string, detail?: 'low' | 'high' | 'auto') => ({
  type: 'image_url' as const,
  image_url: { url, ...(detail && { detail }) },
});

/** A vision server as seen from Lantern: it records each body and answers one fixed message. */
let server: Server;
let port = 0;
const bodies: Record<string, unknown>[] = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      const parsed = JSON.parse(body || '{}') as Record<string, unknown>;
      bodies.push(parsed);
      response.writeHead(200, { 'content-type': 'application/json' });
      const message = { role: 'assistant', content: 'A red square.' };
      const usage = { prompt_tokens: 1, completion_tokens: 3, total_tokens: 4 };
      response.end(
        JSON.stringify(
          request.url?.endsWith('/chat/completions')
            ? {
                id: 'c',
                object: 'chat.completion',
                created: 0,
                model: 'm',
                choices: [{ index: 0, message, finish_reason: 'stop' }],
                usage,
              }
            : { error: { message: 'not here' } },
        ),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

const remote = (model: string, images?: boolean) => ({
  engine: 'remote' as const,
  baseURL: `http://127.0.0.1:${port}/v1`,
  model,
  ...(images !== undefined && { images }),
});

function profile(): ModelProfile {
  return {
    ...bundledProfile(BUNDLED_MODELS),
    // Text first, then a server that reads images: a request with images skips the first.
    'sees-remotely': { task: 'chat', created: 0, candidates: [remote('text-model'), remote('vision-model', true)] },
  };
}

let client: OpenAI;
beforeAll(async () => {
  ({ client } = await sdkClient({
    profile: profile(),
    handler: { onServerError: () => {}, limits: { maxImages: 3, maxImageBytes: 4096 } },
    client: { maxRetries: 0 },
  }));
});

describe('chat image_url parts', () => {
  it('a model that reads text only refuses an image, naming the part; the next request is answered', async () => {
    const refusal = await sdkRefusal(
      client.chat.completions.create({
        model: 'amber-phoenix-4',
        messages: [{ role: 'user', content: [text('What is this?'), image(PNG)] }],
      }),
    );
    expect(refusal.status).toBe(400);
    expect(refusal.param).toBe('messages[0].content[1]');
    expect(refusal.message).toMatch(/image_url is only supported by certain models: `amber-phoenix-4` reads text only/);
    const next = await client.chat.completions.create({
      model: 'amber-phoenix-4',
      messages: [{ role: 'user', content: [text('Hello')] }],
      max_tokens: 3,
    });
    expect(next.choices[0]!.message.role).toBe('assistant');
  });

  it('goes to the candidate that reads images, which gets the parts in order with their detail', async () => {
    bodies.length = 0;
    await client.chat.completions.create({ model: 'sees-remotely', messages: [{ role: 'user', content: 'Hi' }] });
    expect(bodies.at(-1)!.model).toBe('text-model');
    const content = [text('Compare'), image(PNG, 'low'), text('with'), image('https://example.com/b.png')];
    const answer = await client.chat.completions.create({
      model: 'sees-remotely',
      messages: [{ role: 'user', content }],
    });
    expect(answer.choices[0]!.message.content).toBe('A red square.');
    const sent = bodies.at(-1)!;
    expect(sent.model).toBe('vision-model');
    expect((sent.messages as { content: unknown }[])[0]!.content).toEqual(content);
  });

  it("LangChain's string form of image_url is read as the URL", async () => {
    const refusal = await sdkRefusal(
      client.chat.completions.create({
        model: 'amber-phoenix-4',
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: PNG }] }],
      } as never),
    );
    expect(refusal.param).toBe('messages[0].content[0]');
  });

  it('images are a user message’s alone', async () => {
    const refusal = await sdkRefusal(
      client.chat.completions.create({
        model: 'sees-remotely',
        messages: [{ role: 'system', content: [image(PNG)] } as never, { role: 'user', content: 'Hi' }],
      }),
    );
    expect(refusal).toMatchObject({ status: 400, param: 'messages[0]' });
    expect(refusal.message).toMatch(/only allowed for messages with role 'user'/);
  });

  it('refuses URLs that are not an image by http(s) or a base64 image data URL, naming the URL', async () => {
    const refused = async (url: string) =>
      sdkRefusal(
        client.chat.completions.create({ model: 'sees-remotely', messages: [{ role: 'user', content: [image(url)] }] }),
      );
    for (const url of [
      'data:text/plain;base64,aGk=',
      'data:image/png,notbase64',
      'data:image/png;base64,',
      'blob:https://example.com/5e1c',
      'file:///etc/passwd',
      'not a url',
    ]) {
      const refusal = await refused(url);
      expect(refusal, url).toMatchObject({ status: 400, param: 'messages[0].content[0].image_url.url' });
    }
    expect((await refused('data:text/plain;base64,aGk=')).message).toMatch(/image MIME type/);
    expect((await refused('blob:https://example.com/5e1c')).message).toMatch(/`blob:` URL/);
  });

  it('limits: an image over the size limit, more images than the limit', async () => {
    const big = `data:image/png;base64,${Buffer.alloc(5000).toString('base64')}`;
    const tooBig = await sdkRefusal(
      client.chat.completions.create({ model: 'sees-remotely', messages: [{ role: 'user', content: [image(big)] }] }),
    );
    expect(tooBig).toMatchObject({ status: 400, param: 'messages[0].content[0].image_url.url' });
    expect(tooBig.message).toMatch(/the image is 5 KB; the limit is 4 KB per image/);
    const many = await sdkRefusal(
      client.chat.completions.create({
        model: 'sees-remotely',
        messages: [
          { role: 'user', content: [image(PNG), image(PNG)] },
          { role: 'assistant', content: 'Two.' },
          { role: 'user', content: [text('And these?'), image(PNG), image(PNG)] },
        ],
      }),
    );
    expect(many).toMatchObject({ status: 400, param: 'messages[2].content[2]' });
    expect(many.message).toMatch(/Too many images: this request has 4; the limit is 3/);
  });

  it('audio and file parts are refused naming their type', async () => {
    const refusal = await sdkRefusal(
      client.chat.completions.create({
        model: 'sees-remotely',
        messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }] }],
      }),
    );
    expect(refusal.status).toBe(400);
    expect(refusal.param).toBe('messages[0].content[0].type');
    expect(refusal.message).toMatch(/Supported content parts: `text`, and `image_url` in user messages/);
  });
});

describe('Responses input_image parts', () => {
  it('a model that reads text only refuses one, naming the part', async () => {
    const refusal = await sdkRefusal(
      client.responses.create({
        model: 'amber-phoenix-4',
        input: [
          {
            role: 'user',
            content: [
              { type: 'input_text', text: 'What is this?' },
              { type: 'input_image', image_url: PNG, detail: 'auto' },
            ],
          },
        ],
      }),
    );
    expect(refusal).toMatchObject({ status: 400, param: 'input[0].content[1]' });
  });

  it('goes to the candidate that reads images, as chat parts', async () => {
    const response = await client.responses.create({
      model: 'sees-remotely',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_image', image_url: PNG, detail: 'high' },
            { type: 'input_text', text: 'What is this?' },
          ],
        },
      ],
    });
    expect(response.output_text).toBe('A red square.');
    const sent = bodies.at(-1)!;
    expect(sent.model).toBe('vision-model');
    expect((sent.messages as { content: unknown }[]).at(-1)!.content).toEqual([
      image(PNG, 'high'),
      text('What is this?'),
    ]);
  });

  it('file_id is refused with its reason; an image without a URL names image_url; images are user input', async () => {
    const part = (p: object) =>
      sdkRefusal(
        client.responses.create({
          model: 'sees-remotely',
          input: [{ role: 'user', content: [{ type: 'input_image', detail: 'auto', ...p }] }],
        } as never),
      );
    const byFile = await part({ file_id: 'file-abc' });
    expect(byFile).toMatchObject({ status: 400, param: 'input[0].content[0].file_id' });
    expect(byFile.message).toMatch(/no Files API here/);
    expect(await part({})).toMatchObject({ status: 400, param: 'input[0].content[0].image_url' });
    const fromAssistant = await sdkRefusal(
      client.responses.create({
        model: 'sees-remotely',
        input: [{ role: 'assistant', content: [{ type: 'input_image', image_url: PNG, detail: 'auto' }] }],
      } as never),
    );
    expect(fromAssistant).toMatchObject({ status: 400, param: 'input[0].content[0]' });
  });
});

describe('/v1/models', () => {
  it('says what each ID reads: images where a candidate reads them here', async () => {
    const models = new Map(
      (await client.models.list()).data.map((m) => [m.id, m as unknown as Record<string, unknown>]),
    );
    expect(models.get('sees-remotely')!.input_modalities).toEqual(['text', 'image']);
    expect(models.get('crimson-falcon-4')!.input_modalities).toEqual(['text', 'image']);
    expect(models.get('amber-phoenix-4')!.input_modalities).toEqual(['text']);
    expect(models.get('teal-finch-4')!.input_modalities).toEqual(['audio']);
  });
});

/**
 * Issue 41, through the openai SDK on a real engine with the bundled tiny-vision: images that lie about their size are
 * refused before decoding, a request's images are decoded one at a time within their total, and in Node image URLs are
 * fetched only from the operator's hosts at public addresses. The engine's decoder is Node's own (sharp), watched: how
 * many images it decodes, and how many at once.
 */
describe('issue 41: images that cost other keys', () => {
  const VISION = 'crimson-falcon-4';
  // The first held-out question about a shape (test/fixtures/vision/manifest.json): its image, words and answer.
  const held = (
    JSON.parse(readFileSync(new URL('./fixtures/vision/manifest.json', import.meta.url), 'utf8')) as {
      file: string;
      question?: string;
      messages: { content: ({ type: 'image' } | { type: 'text'; text: string })[] | string }[];
      answer: string;
    }[]
  ).find((m) => m.question === 'shape')!;
  const question = (held.messages[0]!.content as { type: string; text?: string }[]).find(
    (p) => p.type === 'text',
  )!.text!;
  // What PyTorch answered from the same weights (the export's reference: the first two of each kind are in it).
  const pytorch = (
    JSON.parse(readFileSync(`${BUNDLED_MODELS}/tiny-vision/reference.json`, 'utf8')) as {
      pytorch_answers: { file: string; answer: string }[];
    }
  ).pytorch_answers.find((r) => r.file === held.file)!.answer;
  const fixture = readFileSync(new URL(`./fixtures/vision/${held.file}`, import.meta.url));
  const fixtureUrl = `data:image/png;base64,${fixture.toString('base64')}`;
  const gifUrl = (gif: Uint8Array) => `data:image/gif;base64,${Buffer.from(gif).toString('base64')}`;
  const decoding = { count: 0, now: 0, most: 0 };

  /** The test's network: `images.example` is a public address, whose server is the one on 127.0.0.1 below. */
  let images: Server;
  let imagesPort = 0;
  let closedPort = 0;
  const hits: string[] = [];
  let engine: Engine;
  beforeAll(async () => {
    images = createServer((request, response) => {
      hits.push(request.url ?? '');
      if (request.url === '/single00.png') return response.writeHead(200, { 'content-type': 'image/png' }).end(fixture);
      response.writeHead(request.url?.startsWith('/admin/') ? 200 : 404).end();
    });
    await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
    imagesPort = (images.address() as { port: number }).port;
    closedPort = CLOSED_PORT;
    const node = nodeImageAccess({
      resolve: async (hostname) =>
        hostname === 'images.example'
          ? [{ address: '93.184.215.14', family: 4 }]
          : (await lookup(hostname, { all: true })).map(({ address, family }) => ({ address, family })),
      open: (url, _to, signal) => openPinned(url, { address: '127.0.0.1', family: 4 }, signal),
    });
    engine = createEngine({
      profile: bundledProfile(BUNDLED_MODELS),
      imageAccess: {
        fetch: node.fetch,
        decode: async (...args) => {
          decoding.count += 1;
          decoding.most = Math.max(decoding.most, ++decoding.now);
          try {
            return await node.decode(...args);
          } finally {
            decoding.now -= 1;
          }
        },
      },
    });
  });
  afterAll(() => new Promise((resolve) => images.close(resolve)));

  const lantern = (limits: Partial<Limits> = {}) =>
    sdkClient({ engine, handler: { onServerError: () => {}, limits }, client: { maxRetries: 0 } });
  const ask = (client: OpenAI, ...urls: string[]) =>
    client.chat.completions.create({
      model: VISION,
      temperature: 0,
      max_tokens: 16,
      messages: [
        {
          role: 'user',
          content: [...urls.map((url) => image(url)), text(question)],
        },
      ],
    });
  const rss = () => process.memoryUsage().rss / 2 ** 20;

  it('the GIF that says 1 × 1 and holds a 16000 × 16000 frame is refused undecoded, naming the part', async () => {
    const { client } = await lantern();
    await ask(client, fixtureUrl); // the model loaded, so that what follows measures the refusal alone
    const gif = lyingGif([1, 1], [16_000, 16_000]);
    const [before, started, decoded] = [rss(), performance.now(), decoding.count];
    const refusal = await sdkRefusal(ask(client, gifUrl(gif)));
    console.log(
      `[issue 41] a ${(gif.length / 1024).toFixed(0)} KB GIF of 16000 × 16000 refused in ` +
        `${(performance.now() - started).toFixed(0)} ms; RSS ${before.toFixed(0)} → ${rss().toFixed(0)} MiB`,
    );
    expect(refusal).toMatchObject({ status: 400, param: 'messages[0].content[0]' });
    expect(refusal.message).toMatch(/16000 × 16000 pixels \(256\.0 megapixels\); the limit is 33\.2 megapixels/);
    expect(decoding.count).toBe(decoded);
    // Three in one request (7.8 GB in the issue): refused by the first, none decoded.
    const three = await sdkRefusal(ask(client, gifUrl(gif), gifUrl(gif), gifUrl(gif)));
    expect(three).toMatchObject({ status: 400, param: 'messages[0].content[0]' });
    expect(decoding.count).toBe(decoded);
    console.log(`[issue 41] three of them refused; RSS ${rss().toFixed(0)} MiB`);
    expect((await ask(client, fixtureUrl)).choices[0]!.message.content).toBe(pytorch);
  });

  it("a request's images are decoded one at a time, and refused past their total before any is decoded", async () => {
    const { width, height } = (await sharp(fixture).metadata()) as { width: number; height: number };
    const { client } = await lantern({ maxTotalImagePixels: 2 * width * height });
    decoding.most = 0;
    const decoded = decoding.count;
    expect((await ask(client, fixtureUrl, fixtureUrl)).choices[0]!.message.content).toBeTruthy();
    expect(decoding.count - decoded).toBe(2);
    expect(decoding.most).toBe(1);
    const refusal = await sdkRefusal(ask(client, fixtureUrl, fixtureUrl, fixtureUrl));
    expect(refusal).toMatchObject({ status: 400, param: 'messages[0].content[2]' });
    expect(refusal.message).toMatch(/for a request's images together/);
    expect(decoding.count - decoded).toBe(2);
  });

  it('fetches no image URL by default in Node: a 400 naming the part that asks for a data URL', async () => {
    hits.length = 0;
    const { client } = await lantern();
    const refusal = await sdkRefusal(ask(client, `http://127.0.0.1:${imagesPort}/single00.png`));
    expect(refusal).toMatchObject({ status: 400, param: 'messages[0].content[0]' });
    expect(refusal.message).toMatch(/fetches no image URLs: its operator allows no hosts.*data URL/);
    expect(hits).toEqual([]);
  });

  it('an allowed host that resolves to loopback is refused alike whether its port is open or closed', async () => {
    hits.length = 0;
    const { client } = await lantern({ imageUrlHosts: ['localhost', '127.0.0.1'] });
    const said: string[] = [];
    for (const url of [
      `http://localhost:${imagesPort}/admin/delete?id=7`,
      `http://localhost:${closedPort}/admin/delete?id=7`,
      `http://127.0.0.1:${imagesPort}/single00.png`,
    ]) {
      const refusal = await sdkRefusal(ask(client, url));
      expect(refusal).toMatchObject({ status: 400, param: 'messages[0].content[0]' });
      said.push(refusal.message.replace(/ at \S+ could /, ' at URL could ')); // the handler redacts a query
    }
    expect(new Set(said).size).toBe(1);
    expect(said[0]).toMatch(/could not be fetched.*says nothing more of why/);
    expect(hits).toEqual([]);
  });

  it('an allowed host at a public address is fetched and answered as the same image sent as a data URL', async () => {
    hits.length = 0;
    const { client } = await lantern({ imageUrlHosts: ['images.example'] });
    const fetched = await ask(client, `http://images.example:${imagesPort}/single00.png`);
    expect(hits).toEqual(['/single00.png']);
    expect(fetched.choices[0]!.message.content).toBe((await ask(client, fixtureUrl)).choices[0]!.message.content);
    const elsewhere = await sdkRefusal(ask(client, `http://localhost:${imagesPort}/single00.png`));
    expect(elsewhere.message).toMatch(/`localhost` is not one/);
  });
});
