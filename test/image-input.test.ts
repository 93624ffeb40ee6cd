import { createServer, type Server } from 'node:http';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundledProfile, type ModelProfile } from '../src/index.ts';
import { sdkRefusal } from './support/api-error.ts';
import { BUNDLED_MODELS, sdkClient } from './support/lantern.ts';

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
