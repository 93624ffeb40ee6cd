/**
 * How Node reads a request's images: createEngine and scripts/engine-thread.ts give it to the local engine. Issue 41:
 * an image URL let any key holder make the server GET its own network — 127.0.0.1, localhost, [::1], a redirect into
 * `/admin/delete?id=7` — and the status it echoed told a closed port from an open one.
 *
 * Node's modules and sharp are taken when first used (`process.getBuiltinModule`, `createRequire`), not imported: the
 * package's root entry reaches this file through createEngine, and a bundle of it for a browser (a worker of an app's
 * own) must not meet `node:dns` or sharp's native addon there.
 */
import type { IncomingMessage } from 'node:http';
import type { LookupFunction } from 'node:net';
import type Sharp from 'sharp';
import { EngineError, throwIfAborted, type ImageLimits } from '../engine-interface/index.ts';
import { isAllowedHost, type DecodeImage, type FetchImage, type ImageAccess } from './image-input.ts';
import { isPublicAddress } from './public-address.ts';

/**
 * Most redirects followed for one image, each checked as the first URL was: an image host's redirects are one or two
 * (http to https, to a CDN's signed URL); more is a loop or a maze.
 */
const MAX_REDIRECTS = 5;

/** An address a host name resolves to. */
export interface ResolvedAddress {
  address: string;
  family: number;
}

export interface NodeImageAccessOptions {
  /** Every address a host name resolves to (default: the system's resolver, `dns.lookup` with `all`). */
  resolve?: ((hostname: string) => Promise<ResolvedAddress[]>) | undefined;
  /**
   * Sends the GET of `url` to `to`, the address already checked, without resolving the name again (default:
   * openPinned). Tests give one that reaches a local server for a public address.
   */
  open?: ((url: URL, to: ResolvedAddress, signal: AbortSignal) => Promise<IncomingMessage>) | undefined;
}

/**
 * Node's image access: URLs fetched only from the hosts the limits allow (`urlHosts`, the handler's `imageUrlHosts`;
 * none when absent), only at public addresses (isPublicAddress: every address the name resolves to, checked after
 * resolution, and the connection made to the address checked — the name is never resolved again, so DNS rebinding
 * cannot swap in a private one), each redirect followed here and checked the same way (at most MAX_REDIRECTS), and
 * every failure past the host list answered with one message, so that nothing tells a refused address from a closed
 * port, an error status, a timeout or an oversized answer (its reason is kept as the error's `cause`, never sent).
 * Decoding is sharp's, told the pixel limit (`limitInputPixels`), after its own reading of the header agrees with
 * Lantern's on the format and the limit.
 *
 * @example
 * createLocalEngine({ imageAccess: nodeImageAccess() });
 */
export function nodeImageAccess(options: NodeImageAccessOptions = {}): Required<ImageAccess> {
  return {
    fetch: guardedFetch(options.resolve ?? resolveAll, options.open ?? openPinned),
    decode: decodeWithSharp,
  };
}

/** One of Node's own modules, taken when first needed (see the file's comment). */
const node = <ID extends 'node:dns' | 'node:http' | 'node:https' | 'node:net' | 'node:module'>(id: ID) =>
  process.getBuiltinModule(id);

/** sharp, as transformers.js (which depends on it) installs it: resolved from here, loaded when first needed. */
let sharpModule: typeof Sharp | undefined;
const sharp: typeof Sharp = ((...args: Parameters<typeof Sharp>) =>
  (sharpModule ??= node('node:module').createRequire(import.meta.url)('sharp') as typeof Sharp)(
    ...args,
  )) as typeof Sharp;

const resolveAll = async (hostname: string): Promise<ResolvedAddress[]> =>
  (await node('node:dns').promises.lookup(hostname, { all: true, verbatim: true })).map(({ address, family }) => ({
    address,
    family,
  }));

function guardedFetch(
  resolve: (hostname: string) => Promise<ResolvedAddress[]>,
  open: NonNullable<NodeImageAccessOptions['open']>,
): FetchImage {
  return async (image, limits, signal) => {
    if (!limits.urlHosts?.length) {
      throw new EngineError(
        'invalid_request',
        'This server fetches no image URLs: its operator allows no hosts (`imageUrlHosts`). Send the image itself as ' +
          'a data URL (data:image/png;base64,…).',
        { param: image.param },
      );
    }
    const timeout = AbortSignal.timeout(limits.fetchTimeoutMs);
    const both = signal ? AbortSignal.any([signal, timeout]) : timeout;
    try {
      return await fetchHops(new URL(image.url), limits, resolve, open, both);
    } catch (error) {
      throwIfAborted(signal);
      throw new EngineError(
        'invalid_request',
        `The image at ${image.url} could not be fetched. This server fetches images only from the hosts its operator ` +
          'allows, at public addresses, within the size and time limits, and says nothing more of why. Or send the ' +
          'image itself as a data URL.',
        { param: image.param, cause: error },
      );
    }
  };
}

/** The image's bytes, from `url` or the redirects it leads to, each hop's host allowed and its address public. */
async function fetchHops(
  url: URL,
  limits: ImageLimits,
  resolve: (hostname: string) => Promise<ResolvedAddress[]>,
  open: NonNullable<NodeImageAccessOptions['open']>,
  signal: AbortSignal,
): Promise<Uint8Array> {
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`a ${url.protocol} URL`);
    if (!isAllowedHost(url.hostname, limits.urlHosts!)) throw new Error(`${url.hostname} is not an allowed host`);
    const to = await publicAddress(url.hostname, resolve, signal);
    const response = await open(url, to, signal);
    const status = response.statusCode ?? 0;
    const location = response.headers.location;
    if (status >= 300 && status < 400 && location) {
      response.destroy();
      url = new URL(location, url);
      continue;
    }
    if (status < 200 || status >= 300) {
      response.destroy();
      throw new Error(`${url.href} answered ${status}`);
    }
    return readBody(response, limits.maxBytes);
  }
  throw new Error(`more than ${MAX_REDIRECTS} redirects`);
}

/** The address to connect to: the host itself when it is an IP address, else the first it resolves to; all public. */
async function publicAddress(
  hostname: string,
  resolve: (hostname: string) => Promise<ResolvedAddress[]>,
  signal: AbortSignal,
): Promise<ResolvedAddress> {
  const bare = hostname.replace(/^\[(.*)\]$/, '$1');
  const family = node('node:net').isIP(bare);
  // dns.lookup takes no signal: the fetch's timeout and the client's abort stop the wait for it.
  const addresses = family ? [{ address: bare, family }] : await untilAborted(resolve(bare), signal);
  const refused = addresses.filter((a) => !isPublicAddress(a.address));
  if (addresses.length === 0 || refused.length > 0) {
    throw new Error(`${hostname} resolves to ${refused.map((a) => a.address).join(', ') || 'nothing'}: not public`);
  }
  return addresses[0]!;
}

function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * A GET of `url` over a connection to `to` alone: node:http(s) asks this `lookup` for the host's address and is given
 * the one already checked (an IP host is connected to as it is), so the name is not resolved a second time; TLS still
 * verifies the certificate against the URL's host name. No shared agent: no pooled socket outlives the check.
 */
export function openPinned(url: URL, to: ResolvedAddress, signal: AbortSignal): Promise<IncomingMessage> {
  const pinned = ((_hostname, options, callback) => {
    if (options.all) callback(null, [{ address: to.address, family: to.family }]);
    else callback(null, to.address, to.family);
  }) as LookupFunction;
  const { request: send } = url.protocol === 'https:' ? node('node:https') : node('node:http');
  const request = send(url, {
    agent: false,
    signal,
    lookup: pinned,
    headers: { accept: 'image/*' },
  });
  return new Promise((resolve, reject) => {
    request.once('response', resolve).once('error', reject).end();
  });
}

/** An answer's body, read up to `maxBytes` and no further, whatever it declared. */
async function readBody(response: IncomingMessage, maxBytes: number): Promise<Uint8Array> {
  const declared = Number(response.headers['content-length']);
  if (declared > maxBytes) {
    response.destroy();
    throw new Error(`it declares ${declared} bytes`);
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    total += chunk.byteLength;
    if (total > maxBytes) {
      response.destroy();
      throw new Error(`it is over ${maxBytes} bytes`);
    }
    chunks.push(chunk);
  }
  const body = Buffer.concat(chunks);
  return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
}

/**
 * sharp, as transformers.js' RawImage uses it in Node (rotated by its EXIF orientation, raw), with the pixel limit
 * given to it (`limitInputPixels`; its default is 268 megapixels, which the 16,000 × 16,000 GIF of issue 41 passed),
 * after its own reading of the header (`metadata()`, which reads every GIF frame) agrees: the same format as Lantern's
 * reading of the first bytes (a file one reads as one format and the other as another is refused), within the limit.
 */
const decodeWithSharp: DecodeImage = async (image, maxPixels, part) => {
  const refuse = (why: string) => new EngineError('invalid_request', why, { param: part.param });
  // Read without the limit (sharp would refuse with a message of its own), then decoded under it.
  const metadata = await sharp(image.bytes, { limitInputPixels: false }).metadata();
  if (`image/${metadata.format}` !== image.type) {
    throw refuse(`The image starts as ${image.type} but its decoder reads it as ${metadata.format}: send one format.`);
  }
  const pixels = (metadata.width ?? 0) * (metadata.height ?? 0);
  if (pixels > maxPixels) {
    throw refuse(
      `The image is ${metadata.width} × ${metadata.height} pixels to its decoder; the limit is ` +
        `${(maxPixels / 1e6).toFixed(1)} megapixels.`,
    );
  }
  const { data, info } = await sharp(image.bytes, { limitInputPixels: maxPixels })
    .rotate()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, channels: info.channels };
};
