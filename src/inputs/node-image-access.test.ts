import { createServer, type Server } from 'node:http';
import sharp from 'sharp';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { lyingGif } from '../../test/support/lying-images.ts';
import { EngineError, type ChatImage, type ImageLimits } from '../engine-interface/index.ts';
import { readImage } from './image-input.ts';
import { nodeImageAccess, openPinned, type ResolvedAddress } from './node-image-access.ts';
import { engineRefusal } from '../../test/support/api-error.ts';

/**
 * Node's image access (issue 41): image URLs fetched only from allowed hosts at public addresses, checked after DNS and
 * connected to as checked, redirects checked hop by hop, one answer for every failure; and sharp told the pixel limit.
 * A server on 127.0.0.1 stands for the internal network, and records every request that reaches it. For the allowed,
 * public path, a resolver and a network are given: public names resolve to public addresses, and a connection to any
 * public address reaches that same server (the name pinned to it by openPinned, the real connection code).
 */
const LIMITS: ImageLimits = { maxBytes: 64 * 1024, maxPixels: 1e6, maxTotalPixels: 2e6, fetchTimeoutMs: 2000 };
const part = (url: string): ChatImage => ({ url, detail: 'auto', at: 0, param: 'messages[0].content[1]' });

let server: Server;
let port = 0;
let closedPort = 0;
/** The paths requested of the server, in order. */
const hits: string[] = [];
let png: Uint8Array;

beforeAll(async () => {
  png = new Uint8Array(
    await sharp({ create: { width: 8, height: 8, channels: 3, background: '#c33' } })
      .png()
      .toBuffer(),
  );
  server = createServer((request, response) => {
    const path = request.url ?? '';
    hits.push(path);
    const redirect = (location: string) => response.writeHead(302, { location }).end();
    if (path === '/red.png') return response.writeHead(200, { 'content-type': 'image/png' }).end(png);
    if (path === '/to-loopback') return redirect(`http://127.0.0.1:${port}/admin/delete?id=7`);
    if (path === '/to-internal') return redirect(`http://internal.example:${port}/admin/delete?id=7`);
    if (path === '/to-unlisted') return redirect(`http://unlisted.example:${port}/red.png`);
    if (path === '/to-public') return redirect(`http://img2.example:${port}/red.png`);
    if (path === '/to-file') return redirect('file:///etc/passwd');
    if (path === '/loop') return redirect('/loop');
    if (path === '/big.png') return response.writeHead(200).end(Buffer.alloc(LIMITS.maxBytes + 1));
    if (path.startsWith('/admin/')) return response.writeHead(200).end('deleted');
    response.writeHead(404, 'Not Found').end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  closedPort = (closed.address() as { port: number }).port;
  await new Promise((resolve) => closed.close(resolve));
});
afterAll(() => new Promise((resolve) => server.close(resolve)));
beforeEach(() => {
  hits.length = 0;
});

/** What the DNS of the test's world answers; a name it lacks does not resolve. */
const DNS: Record<string, ResolvedAddress[]> = {
  'img.example': [{ address: '93.184.215.14', family: 4 }],
  'img2.example': [{ address: '2606:4700:4700::1111', family: 6 }],
  'unlisted.example': [{ address: '93.184.215.15', family: 4 }],
  'internal.example': [{ address: '10.0.0.7', family: 4 }],
  'metadata.example': [{ address: '169.254.169.254', family: 4 }],
  'mapped.example': [{ address: '::ffff:7f00:1', family: 6 }],
  'both.example': [
    { address: '93.184.215.14', family: 4 },
    { address: '127.0.0.1', family: 4 },
  ],
};
const HOSTS = ['img.example', 'img2.example', 'internal.example', 'metadata.example', 'mapped.example', 'both.example'];

/** Node's access in the test's world; `connected` records the address each connection was made to. */
function inWorld() {
  const connected: string[] = [];
  const resolved: string[] = [];
  const access = nodeImageAccess({
    resolve: async (hostname) => {
      resolved.push(hostname);
      const addresses = DNS[hostname];
      if (!addresses) throw new Error(`getaddrinfo ENOTFOUND ${hostname}`);
      return addresses;
    },
    // Every public address is this server: the request goes out by the real pinned connection, to 127.0.0.1.
    open: (url, to, signal) => {
      connected.push(to.address);
      return openPinned(url, { address: '127.0.0.1', family: 4 }, signal);
    },
  });
  return { access, connected, resolved };
}

/** The message of the 400 an image read refused with, naming the image's part. */
const refusal = (promise: Promise<unknown>) => engineRefusal(promise, 'messages[0].content[1]');

/** The one answer to every failure past the host list, its URL aside. */
const UNIFORM = (url: string) =>
  `The image at ${url} could not be fetched. This server fetches images only from the hosts its operator allows, at ` +
  'public addresses, within the size and time limits, and says nothing more of why. Or send the image itself as a ' +
  'data URL.';

describe('nodeImageAccess: which URLs are fetched', () => {
  it('fetches none by default: a 400 that asks for a data URL, and nothing reaches the network', async () => {
    const { fetch } = nodeImageAccess();
    const url = `http://127.0.0.1:${port}/red.png`;
    expect(await refusal(readImage(part(url), LIMITS, { fetch }))).toMatch(
      /fetches no image URLs: its operator allows no hosts \(`imageUrlHosts`\)\. Send the image itself as a data URL/,
    );
    expect(await refusal(readImage(part(url), { ...LIMITS, urlHosts: [] }, { fetch }))).toMatch(/is not one/);
    expect(hits).toEqual([]);
  });

  it('an allowed host that is, or resolves to, a loopback address is refused before any connection', async () => {
    const { fetch } = nodeImageAccess(); // the system's resolver: localhost is 127.0.0.1 and ::1
    const urlHosts = ['localhost', '127.0.0.1', '[::1]', '[::ffff:7f00:1]', '0.0.0.0'];
    const urls = [
      `http://localhost:${port}/red.png`,
      `http://127.0.0.1:${port}/red.png`,
      `http://[::1]:${port}/red.png`,
      `http://2130706433:${port}/red.png`, // 127.0.0.1, as the URL parser reads it
      `http://0x7f.1:${port}/red.png`,
      `http://[::ffff:127.0.0.1]:${port}/red.png`,
      `http://0.0.0.0:${port}/red.png`,
    ];
    for (const url of urls) {
      expect(await refusal(readImage(part(url), { ...LIMITS, urlHosts }, { fetch })), url).toBe(UNIFORM(url));
    }
    expect(hits).toEqual([]);
  });

  it('names resolving to private, link-local (metadata) or mapped loopback addresses, or to any of them, are refused', async () => {
    const { access, connected } = inWorld();
    for (const host of ['internal.example', 'metadata.example', 'mapped.example', 'both.example']) {
      const url = `http://${host}:${port}/red.png`;
      const limits = { ...LIMITS, urlHosts: HOSTS };
      expect(await refusal(readImage(part(url), limits, { fetch: access.fetch })), host).toBe(UNIFORM(url));
    }
    expect(connected).toEqual([]);
    expect(hits).toEqual([]);
  });

  it('an allowed host at a public address is fetched, connected to at the address checked', async () => {
    const { access, connected, resolved } = inWorld();
    const url = `http://img.example:${port}/red.png`;
    const image = await readImage(part(url), { ...LIMITS, urlHosts: HOSTS }, { fetch: access.fetch });
    expect(image).toMatchObject({ type: 'image/png', width: 8, height: 8 });
    expect(image.bytes).toEqual(png);
    expect({ resolved, connected, hits }).toEqual({
      resolved: ['img.example'],
      connected: ['93.184.215.14'],
      hits: ['/red.png'],
    });
  });

  it('the connection goes to the address given, the name never resolved again (no rebinding)', async () => {
    // `.invalid` never resolves (RFC 6761): the answer can only have come from the pinned address.
    const url = new URL(`http://pinned.invalid:${port}/red.png`);
    const response = await openPinned(url, { address: '127.0.0.1', family: 4 }, AbortSignal.timeout(2000));
    expect(response.statusCode).toBe(200);
    response.resume();
    expect(hits).toEqual(['/red.png']);
  });
});

describe('nodeImageAccess: redirects, each hop checked', () => {
  const limits = { ...LIMITS, urlHosts: [...HOSTS, '127.0.0.1'] };

  it('a redirect to a loopback or private address is refused; the target is never asked', async () => {
    const { access, connected } = inWorld();
    for (const path of ['/to-loopback', '/to-internal']) {
      const url = `http://img.example:${port}${path}`;
      expect(await refusal(readImage(part(url), limits, { fetch: access.fetch })), path).toBe(UNIFORM(url));
    }
    expect(hits).toEqual(['/to-loopback', '/to-internal']);
    expect(connected).toEqual(['93.184.215.14', '93.184.215.14']);
  });

  it('a redirect to a host not on the list, or to another scheme, is refused', async () => {
    const { access, connected } = inWorld();
    for (const path of ['/to-unlisted', '/to-file']) {
      const url = `http://img.example:${port}${path}`;
      expect(await refusal(readImage(part(url), limits, { fetch: access.fetch })), path).toBe(UNIFORM(url));
    }
    expect(connected).toEqual(['93.184.215.14', '93.184.215.14']);
  });

  it('a redirect to another allowed public host is followed; a loop is refused after 5 redirects', async () => {
    const { access, connected } = inWorld();
    const image = await readImage(part(`http://img.example:${port}/to-public`), limits, { fetch: access.fetch });
    expect(image.bytes).toEqual(png);
    expect(connected).toEqual(['93.184.215.14', '2606:4700:4700::1111']);
    hits.length = 0;
    const loop = `http://img.example:${port}/loop`;
    expect(await refusal(readImage(part(loop), limits, { fetch: access.fetch }))).toBe(UNIFORM(loop));
    expect(hits).toEqual(Array(6).fill('/loop'));
  });
});

describe('nodeImageAccess: one answer, whatever went wrong', () => {
  it('an open port, a closed one, an error status, a private address, a name that does not resolve and too large a body read alike', async () => {
    const { access } = inWorld();
    const limits = { ...LIMITS, urlHosts: [...HOSTS, 'nowhere.example'] };
    const urls = [
      `http://img.example:${port}/missing.png`, // 404
      `http://img.example:${closedPort}/red.png`, // connection refused
      `http://img.example:${port}/big.png`, // over the size limit
      `http://internal.example:${port}/red.png`, // a private address
      `http://nowhere.example:${port}/red.png`, // no such name
    ];
    const messages = await Promise.all(
      urls.map(async (url) =>
        (await refusal(readImage(part(url), limits, { fetch: access.fetch }))).replace(url, 'URL'),
      ),
    );
    expect(new Set(messages)).toEqual(new Set([UNIFORM('URL')]));
    // And with the real network: a loopback port open or closed is the same refusal, and neither is connected to.
    const { fetch } = nodeImageAccess();
    const local = { ...LIMITS, urlHosts: ['127.0.0.1'] };
    const open = await refusal(readImage(part(`http://127.0.0.1:${port}/admin/delete?id=7`), local, { fetch }));
    const closed = await refusal(readImage(part(`http://127.0.0.1:${closedPort}/admin/delete?id=7`), local, { fetch }));
    expect(open.replace(String(port), 'PORT')).toBe(closed.replace(String(closedPort), 'PORT'));
    expect(hits).toEqual(['/missing.png', '/big.png']);
  });

  it("the request's abort is an abort, not the image's fault", async () => {
    const controller = new AbortController();
    const access = nodeImageAccess({
      resolve: () => new Promise(() => {}), // a resolver that never answers
    });
    const reading = readImage(
      part('http://img.example/red.png'),
      { ...LIMITS, urlHosts: ['img.example'] },
      {
        fetch: access.fetch,
        signal: controller.signal,
      },
    );
    setTimeout(() => controller.abort(), 50);
    expect(EngineError.from(await reading.catch((e: unknown) => e)).kind).toBe('aborted');
  });
});

describe('nodeImageAccess: decoding with sharp', () => {
  const { decode } = nodeImageAccess();

  it('decodes an image to its pixels', async () => {
    const image = await readImage(part(`data:image/png;base64,${Buffer.from(png).toString('base64')}`), LIMITS);
    const pixels = await decode(image, LIMITS.maxPixels, part('x'));
    expect(pixels).toMatchObject({ width: 8, height: 8, channels: 3 });
    expect(Array.from(pixels.data.subarray(0, 3))).toEqual([0xcc, 0x33, 0x33]);
  });

  it('refuses by its own reading of the header: past the pixel limit, or another format than the bytes begin as', async () => {
    // Given straight to the decoder, past readImage: sharp's own metadata sees the frame, and the limit holds.
    const gif = lyingGif([1, 1], [2000, 2000]);
    const bomb = { bytes: gif, type: 'image/gif', width: 1, height: 1 };
    expect(await refusal(decode(bomb, LIMITS.maxPixels, part('x')))).toMatch(/2000 × 2000 pixels to its decoder/);
    const mislabelled = { bytes: png, type: 'image/gif', width: 8, height: 8 };
    expect(await refusal(decode(mislabelled, LIMITS.maxPixels, part('x')))).toMatch(/its decoder reads it as png/);
  });
});
