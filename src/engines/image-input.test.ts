import { createServer, type Server } from 'node:http';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError, type ChatImage } from '../engine/index.ts';
import { imageHeader, readImage } from './image-input.ts';

/**
 * An image of a request as bytes a decoder takes: data URLs and fetched URLs, the header's size read for each format
 * (checked against images sharp encodes), and every limit and failure a 400 naming the part.
 */
const LIMITS = { maxBytes: 64 * 1024, maxPixels: 1000 * 1000, fetchTimeoutMs: 300 };
const part = (url: string): ChatImage => ({ url, detail: 'auto', at: 0, param: 'messages[0].content[1]' });
const dataUrl = (bytes: Uint8Array, type = 'image/png') =>
  `data:${type};base64,${Buffer.from(bytes).toString('base64')}`;

async function encoded(format: 'png' | 'jpeg' | 'webp' | 'gif', width: number, height: number, lossless = false) {
  const image = sharp({ create: { width, height, channels: 3, background: { r: 200, g: 30, b: 30 } } });
  const out = format === 'webp' ? image.webp({ lossless }) : image.toFormat(format);
  return new Uint8Array(await out.toBuffer());
}

/** A PNG header that claims `width` × `height` pixels, with no pixel data: a decompression bomb's first bytes. */
function claimingPng(width: number, height: number): Uint8Array {
  const bytes = new Uint8Array(33);
  bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]);
  const view = new DataView(bytes.buffer);
  view.setUint32(16, width);
  view.setUint32(20, height);
  return bytes;
}

async function refusal(promise: Promise<unknown>) {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(EngineError);
  expect((error as EngineError).kind).toBe('invalid_request');
  expect((error as EngineError).param).toBe('messages[0].content[1]');
  return (error as EngineError).message;
}

describe('imageHeader', () => {
  it.each([
    ['png', false],
    ['jpeg', false],
    ['gif', false],
    ['webp', false],
    ['webp', true],
  ] as const)('reads the size of a %s (lossless %s) as sharp encoded it', async (format, lossless) => {
    const header = imageHeader(await encoded(format, 123, 45, lossless));
    expect(header).toEqual({ type: `image/${format}`, width: 123, height: 45 });
  });

  it('knows no size for bytes that are no image it reads', () => {
    expect(imageHeader(new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg"/>'))).toBeUndefined();
    expect(imageHeader(new Uint8Array([0xff, 0xd8, 0x00]))).toBeUndefined();
  });
});

describe('readImage: data URLs', () => {
  it('gives the bytes, type and size', async () => {
    const png = await encoded('png', 20, 10);
    const image = await readImage(part(dataUrl(png)), LIMITS);
    expect(image).toMatchObject({ type: 'image/png', width: 20, height: 10 });
    expect(image.bytes).toEqual(png);
  });

  it('refuses an image of more pixels than the limit from its header, before decoding it', async () => {
    expect(await refusal(readImage(part(dataUrl(claimingPng(50_000, 50_000))), LIMITS))).toMatch(
      /50000 × 50000 pixels \(2500\.0 megapixels\); the limit is 1\.0 megapixels/,
    );
  });

  it('refuses what is no image it reads, and an image of no pixels', async () => {
    const svg = dataUrl(new TextEncoder().encode('<svg/>'), 'image/svg+xml');
    expect(await refusal(readImage(part(svg), LIMITS))).toMatch(/PNG, JPEG, GIF, WebP or BMP/);
    expect(await refusal(readImage(part(dataUrl(claimingPng(0, 10))), LIMITS))).toMatch(/no pixels/);
  });
});

describe('readImage: http(s) URLs, fetched', () => {
  let server: Server;
  let base = '';
  let png: Uint8Array;
  beforeAll(async () => {
    png = await encoded('png', 8, 8);
    server = createServer((request, response) => {
      const path = request.url ?? '';
      if (path === '/red.png') return response.writeHead(200, { 'content-type': 'image/png' }).end(png);
      if (path === '/slow.png') return void setTimeout(() => response.end(png), 2000);
      if (path === '/huge-declared.png') {
        return response.writeHead(200, { 'content-length': String(LIMITS.maxBytes * 4) }).end();
      }
      if (path === '/huge-streamed.png') {
        response.writeHead(200, { 'content-type': 'image/png' }); // chunked: no length declared
        for (let i = 0; i < 8; i++) response.write(Buffer.alloc(16 * 1024));
        return response.end();
      }
      response.writeHead(404, 'Not Found').end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it('fetches the image', async () => {
    const image = await readImage(part(`${base}/red.png`), LIMITS);
    expect(image).toMatchObject({ type: 'image/png', width: 8, height: 8 });
    expect(image.bytes).toEqual(png);
  });

  it("refuses with the URL's reason: its status, a timeout, an unreachable server", async () => {
    expect(await refusal(readImage(part(`${base}/missing.png`), LIMITS))).toMatch(/answered 404 Not Found/);
    expect(await refusal(readImage(part(`${base}/slow.png`), LIMITS))).toMatch(/took more than 0\.3 s/);
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    expect(await refusal(readImage(part(`http://127.0.0.1:${port}/x.png`), LIMITS))).toMatch(/could not be fetched/);
  });

  it('reads no more than the size limit, declared or not', async () => {
    expect(await refusal(readImage(part(`${base}/huge-declared.png`), LIMITS))).toMatch(
      /is 256 KB; the limit is 64 KB/,
    );
    expect(await refusal(readImage(part(`${base}/huge-streamed.png`), LIMITS))).toMatch(/over the limit of 64 KB/);
  });

  it("passes the request's abort on as an abort, not as the image's fault", async () => {
    const controller = new AbortController();
    const reading = readImage(part(`${base}/slow.png`), { ...LIMITS, fetchTimeoutMs: 5000 }, controller.signal);
    setTimeout(() => controller.abort(), 50);
    const error = await reading.catch((e: unknown) => e);
    expect(EngineError.from(error).kind).toBe('aborted');
  });
});
