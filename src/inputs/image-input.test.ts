import { createServer, type Server } from 'node:http';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineError, type ChatImage } from '../engine-interface/index.ts';
import { jpegWithSecondFrame, lyingApng, lyingGif, lyingWebp } from '../../test/support/lying-images.ts';
import { fetchAsPage, imageHeader, readImage, readImages } from './image-input.ts';
import { engineRefusal } from '../../test/support/api-error.ts';

/**
 * An image of a request as bytes a decoder takes: data URLs and fetched URLs, the size read for each format from every
 * frame's header (checked against images sharp encodes, and against images whose first header lies: issue 41), a
 * request's images within their total, and every limit and failure a 400 naming the part.
 */
const LIMITS = { maxBytes: 64 * 1024, maxPixels: 1000 * 1000, maxTotalPixels: 1500 * 1000, fetchTimeoutMs: 300 };
const part = (url: string, param = 'messages[0].content[1]'): ChatImage => ({ url, detail: 'auto', at: 0, param });
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

/** The message of the 400 an image read refused with, naming the image's part. */
const refusal = (promise: Promise<unknown>) => engineRefusal(promise, 'messages[0].content[1]');

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

  it("reads an animated GIF's size as sharp encoded it, every frame walked", async () => {
    const frame = (background: string) =>
      sharp({ create: { width: 30, height: 60, channels: 3, background } })
        .png()
        .toBuffer();
    const frames = [await frame('#c33'), await frame('#3c3')];
    const animated = await sharp(frames, { join: { animated: true } })
      .gif()
      .toBuffer();
    expect((await sharp(animated).metadata()).pages).toBe(2);
    expect(imageHeader(new Uint8Array(animated))).toEqual({ type: 'image/gif', width: 30, height: 60 });
  });

  it('a GIF frame larger than its logical screen, or placed past it, is the size (issue 41)', async () => {
    const gif = lyingGif([1, 1], [16_000, 16_000]);
    expect(gif.length).toBeLessThan(180_000); // the issue's 174 KB
    expect(imageHeader(gif)).toEqual({ type: 'image/gif', width: 16_000, height: 16_000 });
    expect(imageHeader(lyingGif([10, 10], [4, 4], [3000, 20]))).toMatchObject({ width: 3004, height: 24 });
    // sharp, the decoder, draws the frame at its size: the header above says what it decodes.
    const drawn = await sharp(lyingGif([1, 1], [64, 48])).metadata();
    expect([drawn.width, drawn.height]).toEqual([64, 48]);
  });

  it('an APNG frame, an animated WebP frame or a second JPEG frame past the first header is the size', async () => {
    expect(imageHeader(lyingApng([1, 1], [9000, 9000]))).toEqual({ type: 'image/png', width: 9000, height: 9000 });
    expect(imageHeader(lyingApng([10, 10], [5, 5], [7000, 0]))).toMatchObject({ width: 7005, height: 10 });
    expect(imageHeader(lyingWebp([1, 1], [16_000, 12_000]))).toEqual({
      type: 'image/webp',
      width: 16_000,
      height: 12_000,
    });
    const jpeg = await encoded('jpeg', 8, 8);
    expect(imageHeader(jpegWithSecondFrame(jpeg, [20_000, 30_000]))).toEqual({
      type: 'image/jpeg',
      width: 20_000,
      height: 30_000,
    });
  });

  it("a JPEG's EXIF thumbnail is not its frame; stuffed bytes in a scan are not markers", async () => {
    const jpeg = await sharp({ create: { width: 50, height: 40, channels: 3, background: '#3c3' } })
      .jpeg()
      .withExif({ IFD0: { Copyright: 'x'.repeat(500) } })
      .toBuffer();
    expect(imageHeader(new Uint8Array(jpeg))).toEqual({ type: 'image/jpeg', width: 50, height: 40 });
    // Noise gives entropy-coded data full of 0xFF00 and restart markers: none of it reads as a frame.
    const noise = Buffer.alloc(300 * 200 * 3);
    for (let i = 0; i < noise.length; i++) noise[i] = (i * 2654435761) >>> 24;
    const noisy = await sharp(noise, { raw: { width: 300, height: 200, channels: 3 } })
      .jpeg({ progressive: true, quality: 100 })
      .toBuffer();
    expect(imageHeader(new Uint8Array(noisy))).toEqual({ type: 'image/jpeg', width: 300, height: 200 });
  });

  it("reads a BMP's size from either header, and refuses one that wraps a PNG or JPEG", () => {
    const bmp = (header: number, width: number, height: number, compression = 0) => {
      const bytes = Buffer.alloc(14 + Math.max(header, 40));
      bytes.write('BM');
      bytes.writeUInt32LE(header, 14);
      if (header === 12) {
        bytes.writeUInt16LE(width, 18);
        bytes.writeUInt16LE(height, 20);
      } else {
        bytes.writeInt32LE(width, 18);
        bytes.writeInt32LE(height, 22);
        bytes.writeUInt32LE(compression, 30);
      }
      return new Uint8Array(bytes);
    };
    expect(imageHeader(bmp(40, 640, -480))).toEqual({ type: 'image/bmp', width: 640, height: 480 });
    expect(imageHeader(bmp(12, 640, 480))).toEqual({ type: 'image/bmp', width: 640, height: 480 });
    expect(imageHeader(bmp(40, 1, 1, 5))).toBeUndefined();
    expect(imageHeader(bmp(124, 1, 1, 4))).toBeUndefined();
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

  it('refuses the GIF whose header says 1 × 1 and whose frame is 16000 × 16000, by its frame', async () => {
    const gif = dataUrl(lyingGif([1, 1], [16_000, 16_000]), 'image/gif');
    expect(await refusal(readImage(part(gif), { ...LIMITS, maxBytes: 2 ** 20 }))).toMatch(
      /16000 × 16000 pixels \(256\.0 megapixels\)/,
    );
  });
});

describe('readImages: a request’s images', () => {
  it("are read in order, each within its limit and all within the request's total, refused naming the part", async () => {
    const png = dataUrl(await encoded('png', 1000, 600));
    const parts = [0, 1, 2].map((i) => part(png, `messages[0].content[${i}]`));
    expect((await readImages(parts.slice(0, 2), LIMITS)).map((image) => image.width)).toEqual([1000, 1000]);
    const error = await readImages(parts, LIMITS).catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'invalid_request', param: 'messages[0].content[2]' });
    expect((error as Error).message).toMatch(/come to 1\.8 megapixels with this one; the limit is 1\.5 megapixels/);
  });

  it('refuses the first image over a limit before reading any after it', async () => {
    const fetched: string[] = [];
    const fetch = async (image: ChatImage) => {
      fetched.push(image.url);
      return encoded('png', 4, 4);
    };
    const gif = dataUrl(lyingGif([1, 1], [2000, 2000]), 'image/gif');
    const parts = [part(gif, 'a'), part('https://images.example/b.png', 'b')];
    const error = await readImages(parts, LIMITS, { fetch }).catch((e: unknown) => e);
    expect(error).toMatchObject({ param: 'a' });
    expect(fetched).toEqual([]);
  });
});

describe('readImage: the hosts a URL may name', () => {
  it('with a list, a URL of another host is refused before anything is fetched; one of the list is fetched', async () => {
    const png = await encoded('png', 4, 4);
    const fetched: string[] = [];
    const fetch = async (image: ChatImage) => (fetched.push(image.url), png);
    const limits = { ...LIMITS, urlHosts: ['Images.Example.com'] };
    expect(await refusal(readImage(part('https://elsewhere.example/a.png'), limits, { fetch }))).toMatch(
      /only from the hosts this server's operator allows, and `elsewhere.example` is not one/,
    );
    expect(fetched).toEqual([]);
    await readImage(part('https://images.example.com./a.png'), limits, { fetch });
    expect(fetched).toEqual(['https://images.example.com./a.png']);
  });
});

describe('readImage: http(s) URLs, fetched as a page would (a browser engine worker)', () => {
  /** The browser's engine worker's access: the page's fetch. */
  const asPage = { fetch: fetchAsPage };
  let server: Server;
  let base = '';
  let png: Uint8Array;
  beforeAll(async () => {
    png = await encoded('png', 8, 8);
    server = createServer((request, response) => {
      const path = request.url ?? '';
      if (path === '/red.png') return response.writeHead(200, { 'content-type': 'image/png' }).end(png);
      if (path === '/slow.png') return void setTimeout(() => response.end(png), 2000);
      if (path === '/elsewhere.png') {
        const { port } = server.address() as { port: number };
        return response.writeHead(302, { location: `http://localhost:${port}/red.png` }).end();
      }
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
    const image = await readImage(part(`${base}/red.png`), LIMITS, asPage);
    expect(image).toMatchObject({ type: 'image/png', width: 8, height: 8 });
    expect(image.bytes).toEqual(png);
  });

  it("refuses with the URL's reason: its status, a timeout, an unreachable server", async () => {
    expect(await refusal(readImage(part(`${base}/missing.png`), LIMITS, asPage))).toMatch(/answered 404 Not Found/);
    expect(await refusal(readImage(part(`${base}/slow.png`), LIMITS, asPage))).toMatch(/took more than 0\.3 s/);
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    expect(await refusal(readImage(part(`http://127.0.0.1:${port}/x.png`), LIMITS, asPage))).toMatch(
      /could not be fetched/,
    );
  });

  it('with a list of hosts, a redirect that lands on another host is refused', async () => {
    const url = `${base}/elsewhere.png`;
    expect(await refusal(readImage(part(url), { ...LIMITS, urlHosts: ['127.0.0.1'] }, asPage))).toMatch(
      /redirects to `localhost`, which is not a host this server's operator allows/,
    );
    const both = { ...LIMITS, urlHosts: ['127.0.0.1', 'localhost'] };
    expect((await readImage(part(url), both, asPage)).bytes).toEqual(png);
  });

  it('reads no more than the size limit, declared or not', async () => {
    expect(await refusal(readImage(part(`${base}/huge-declared.png`), LIMITS, asPage))).toMatch(
      /is 256 KB; the limit is 64 KB/,
    );
    expect(await refusal(readImage(part(`${base}/huge-streamed.png`), LIMITS, asPage))).toMatch(
      /over the limit of 64 KB/,
    );
  });

  it("passes the request's abort on as an abort, not as the image's fault", async () => {
    const controller = new AbortController();
    const reading = readImage(
      part(`${base}/slow.png`),
      { ...LIMITS, fetchTimeoutMs: 5000 },
      { ...asPage, signal: controller.signal },
    );
    setTimeout(() => controller.abort(), 50);
    const error = await reading.catch((e: unknown) => e);
    expect(EngineError.from(error).kind).toBe('aborted');
  });
});

describe('readImage without a fetch of its realm', () => {
  it('fetches no URL at all, and asks for a data URL', async () => {
    let reached = false;
    const server = createServer((_request, response) => {
      reached = true;
      response.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/a.png`;
    expect(await refusal(readImage(part(url), LIMITS))).toMatch(
      /not fetched here: send the image itself as a data URL/,
    );
    await new Promise((resolve) => server.close(resolve));
    expect(reached).toBe(false);
  });
});
