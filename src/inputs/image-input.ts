import { readAtMost } from '../bytes/byte-chunks.ts';
import { byteSize, EngineError, throwIfAborted, type ChatImage, type ImageLimits } from '../engine-interface/index.ts';

/** An image's bytes, checked: a format the decoders read, and its size from its headers, within the pixel limit. */
export interface ImageBytes {
  bytes: Uint8Array;
  /** Its MIME type, from its header (`image/png`). */
  type: string;
  /**
   * The most a decoder of it may draw: its header's size, or further where one of its frames reaches past that (a GIF
   * frame, an APNG frame, an animated WebP frame or bitstream, a second JPEG frame: see imageHeader).
   */
  width: number;
  height: number;
}

/** An image's pixels, row by row, as a realm's decoder gives them. */
export interface DecodedImage {
  data: Uint8Array | Uint8ClampedArray;
  width: number;
  height: number;
  channels: 1 | 2 | 3 | 4;
}

/** How a realm reaches an http(s) image: its bytes, within `limits`, or an EngineError naming `image.param`. */
export type FetchImage = (image: ChatImage, limits: ImageLimits, signal?: AbortSignal) => Promise<Uint8Array>;

/** How a realm decodes an image, refusing one past `maxPixels` before it decodes it (an EngineError naming `part`). */
export type DecodeImage = (image: ImageBytes, maxPixels: number, part: ChatImage) => Promise<DecodedImage>;

/**
 * What a realm does with a request's images that shared code cannot: reach a URL, and decode. A browser's engine worker
 * fetches as its page would (`fetchAsPage`) and decodes with transformers.js' RawImage (`createImageBitmap`); Node's
 * entry points give `nodeImageAccess()` (node-image-access.ts): a fetch that reaches only allowed hosts at public
 * addresses, and sharp told the pixel limit. A realm that gives no `fetch` fetches no URL at all (`noImageURLs`): the
 * safe default for a server, whose network its key holders must not reach.
 */
export interface ImageAccess {
  fetch?: FetchImage | undefined;
  decode?: DecodeImage | undefined;
}

/** Limits for a request that came without them (a caller of the engine, not the handler): the handler's defaults. */
export const DEFAULT_IMAGE_LIMITS: ImageLimits = Object.freeze({
  maxBytes: 20 * 2 ** 20,
  maxPixels: 7680 * 4320,
  maxTotalPixels: 16 * 3840 * 2160,
  fetchTimeoutMs: 15_000,
});

const FORMATS = 'PNG, JPEG, GIF, WebP or BMP';

/**
 * A request's images as bytes, read one after another, each within the per-image limits and all of them within the
 * request's total of pixels (`maxTotalPixels`), refused naming the part that passes it before any image is decoded.
 * One at a time: at most one image is being fetched for the request, and the first image refused is the first in order.
 */
export async function readImages(
  images: readonly ChatImage[],
  limits: ImageLimits,
  options: { fetch?: FetchImage | undefined; signal?: AbortSignal | undefined } = {},
): Promise<ImageBytes[]> {
  const read: ImageBytes[] = [];
  let pixels = 0;
  for (const image of images) {
    const bytes = await readImage(image, limits, options);
    pixels += bytes.width * bytes.height;
    if (pixels > limits.maxTotalPixels) {
      throw new EngineError(
        'invalid_request',
        `This request's images come to ${megapixels(pixels)} with this one; the limit is ` +
          `${megapixels(limits.maxTotalPixels)} for a request's images together. Send fewer or smaller images.`,
        { param: image.param },
      );
    }
    read.push(bytes);
  }
  return read;
}

/**
 * A request's image as bytes the model's decoder can take: a data URL's payload, or an http(s) URL fetched by the
 * realm's `fetch` (default: as the page would, fetchAsPage), within the size limit and the timeout; when the limits
 * list the hosts images may come from (`urlHosts`), a URL of another is refused before anything is fetched. Its width
 * and height are read from its headers before anything decodes it, every frame included, so that an image of more
 * pixels than the limit (a decompression bomb: a small PNG that claims 50,000 × 50,000, or a GIF whose header says 1 × 1
 * and whose frame is 16,000 × 16,000) is refused without being decoded. Every failure is a 400 naming the image's part;
 * an abort of the request is passed on as such.
 */
export async function readImage(
  image: ChatImage,
  limits: ImageLimits,
  options: { fetch?: FetchImage | undefined; signal?: AbortSignal | undefined } = {},
): Promise<ImageBytes> {
  const refuse = (why: string) => new EngineError('invalid_request', why, { param: image.param });
  let bytes: Uint8Array;
  if (image.url.startsWith('data:')) {
    bytes = fromDataUrl(image.url, refuse);
  } else {
    let host: string;
    try {
      host = new URL(image.url).hostname;
    } catch {
      throw refuse('The image URL is neither a data URL nor an http(s) URL.');
    }
    if (limits.urlHosts && !isAllowedHost(host, limits.urlHosts)) {
      throw refuse(
        `Images are fetched only from the hosts this server's operator allows, and \`${host}\` is not one. ` +
          'Send the image itself as a data URL.',
      );
    }
    bytes = await (options.fetch ?? noImageURLs)(image, limits, options.signal);
  }
  if (bytes.byteLength > limits.maxBytes) {
    throw refuse(`The image is ${byteSize(bytes.byteLength)}; the limit is ${byteSize(limits.maxBytes)} per image.`);
  }
  const header = imageHeader(bytes);
  if (!header) throw refuse(`The image is not one this decoder reads: send ${FORMATS}.`);
  const pixels = header.width * header.height;
  if (header.width === 0 || header.height === 0)
    throw refuse('The image has no pixels (its header says 0 wide or high).');
  if (pixels > limits.maxPixels) {
    throw refuse(
      `The image is ${header.width} × ${header.height} pixels (${megapixels(pixels)}); the limit is ` +
        `${megapixels(limits.maxPixels)}. Send it smaller: the model sees it far smaller still.`,
    );
  }
  return { bytes, ...header };
}

/**
 * Whether a URL's host (as `URL.hostname` gives it: lower case, an IPv6 address in brackets) is one of `hosts`: exact
 * names, in any case, a final dot ignored (`example.com.` is `example.com` to DNS).
 */
export function isAllowedHost(hostname: string, hosts: readonly string[]): boolean {
  const bare = (host: string) => host.toLowerCase().replace(/\.$/, '');
  return hosts.some((host) => bare(host) === bare(hostname));
}

function fromDataUrl(url: string, refuse: (why: string) => EngineError): Uint8Array {
  const comma = url.indexOf(',');
  try {
    const binary = atob(url.slice(comma + 1));
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  } catch {
    throw refuse('The data URL is not valid base64.');
  }
}

/** The fetch of a realm that was given none: every http(s) image refused, a data URL asked for. */
export const noImageURLs: FetchImage = (image) =>
  Promise.reject(
    new EngineError(
      'invalid_request',
      'Image URLs are not fetched here: send the image itself as a data URL (`data:image/png;base64,…`).',
      { param: image.param },
    ),
  );

/**
 * An image fetched as the page would fetch it: the realm's origin, its CORS rules, cookies only for its own origin,
 * redirects followed by the platform (with a list of allowed hosts, a redirect that ends on another host is refused,
 * its answer unread). A browser's engine worker fetches this way; Node's entry points never do (node-image-access.ts).
 * Failures say why (the URL's status, a timeout, a network or CORS failure): what the page could learn for itself.
 */
export const fetchAsPage: FetchImage = async (image, limits, signal) => {
  const { url } = image;
  const refuse = (why: string) => new EngineError('invalid_request', why, { param: image.param });
  const timeout = AbortSignal.timeout(limits.fetchTimeoutMs);
  const both = signal ? AbortSignal.any([signal, timeout]) : timeout;
  const failed = (error: unknown): EngineError => {
    if (signal?.aborted) return new EngineError('aborted', 'The request was cancelled by the client.');
    if (timeout.aborted)
      return refuse(`Fetching the image at ${url} took more than ${limits.fetchTimeoutMs / 1000} s.`);
    const why = error instanceof Error ? error.message : String(error);
    return refuse(
      `The image at ${url} could not be fetched (${why}). Lantern fetches it as this page would: its server must be ` +
        'reachable and, on another origin, allow this one (CORS). Or send the image itself as a data URL.',
    );
  };
  let response: Response;
  try {
    response = await fetch(url, { signal: both, credentials: 'same-origin', headers: { accept: 'image/*' } });
  } catch (error) {
    throw failed(error);
  }
  const landed = response.url ? new URL(response.url).hostname : undefined;
  if (limits.urlHosts && landed !== undefined && !isAllowedHost(landed, limits.urlHosts)) {
    await response.body?.cancel().catch(() => {});
    throw refuse(`The image at ${url} redirects to \`${landed}\`, which is not a host this server's operator allows.`);
  }
  if (!response.ok) {
    await response.body?.cancel().catch(() => {});
    throw refuse(
      `Fetching the image at ${url} answered ${response.status}${response.statusText ? ` ${response.statusText}` : ''}.`,
    );
  }
  const declared = Number(response.headers.get('content-length'));
  if (declared > limits.maxBytes) {
    await response.body?.cancel().catch(() => {});
    throw refuse(`The image at ${url} is ${byteSize(declared)}; the limit is ${byteSize(limits.maxBytes)} per image.`);
  }
  // Read up to the limit and no further, whatever the server declared.
  const bytes = await readAtMost(response.body!.getReader(), limits.maxBytes).catch((error: unknown) => {
    throw failed(error);
  });
  if (!bytes) throw refuse(`The image at ${url} is over the limit of ${byteSize(limits.maxBytes)} per image.`);
  throwIfAborted(signal);
  return bytes;
};

/**
 * The format of an image and the most pixels a decoder of it may draw, for the formats browsers decode (sharp, in
 * Node, all but BMP); else undefined. Not the first header alone: issue 41's GIF said 1 × 1 in its logical screen and
 * held a 16,000 × 16,000 frame, which the decoder drew at the frame's size (1 GB). So every frame is read — each GIF
 * image descriptor, each APNG `fcTL`, each WebP `ANMF` frame and `VP8 `/`VP8L` bitstream beside the `VP8X` canvas,
 * each JPEG frame header (SOFn, DHP) past every scan — and the size is the largest reach of any of them, offsets
 * included. A BMP that wraps a whole PNG or JPEG (BI_PNG, BI_JPEG), whose size its own header need not tell, is no
 * image read here.
 */
export function imageHeader(b: Uint8Array): Omit<ImageBytes, 'bytes'> | undefined {
  const ascii = (at: number, length: number) => String.fromCharCode(...b.subarray(at, at + length));
  const size = (type: string, reach: Reach | undefined) => reach && { type, width: reach.width, height: reach.height };
  if (b.length >= 24 && ascii(0, 8) === '\x89PNG\r\n\x1a\n' && ascii(12, 4) === 'IHDR') {
    return size('image/png', pngReach(b));
  }
  if (b.length >= 13 && (ascii(0, 6) === 'GIF87a' || ascii(0, 6) === 'GIF89a')) return size('image/gif', gifReach(b));
  if (b.length >= 26 && ascii(0, 2) === 'BM') return size('image/bmp', bmpReach(b));
  if (b.length >= 20 && ascii(0, 4) === 'RIFF' && ascii(8, 4) === 'WEBP') return size('image/webp', webpReach(b));
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xd8) return size('image/jpeg', jpegReach(b));
  return undefined;
}

/** How far right and down an image's frames reach, offsets included. */
interface Reach {
  width: number;
  height: number;
}

const cover = (reach: Reach, x: number, y: number, width: number, height: number) => {
  reach.width = Math.max(reach.width, x + width);
  reach.height = Math.max(reach.height, y + height);
};

const viewOf = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength);

/** A PNG's IHDR, and each APNG frame (`fcTL`: width, height, x and y offsets) past it. */
function pngReach(b: Uint8Array): Reach {
  const view = viewOf(b);
  const reach = { width: view.getUint32(16), height: view.getUint32(20) };
  for (let at = 8; at + 8 <= b.length;) {
    const length = view.getUint32(at);
    const type = String.fromCharCode(...b.subarray(at + 4, at + 8));
    if (type === 'IEND') break;
    if (type === 'fcTL' && at + 28 <= b.length) {
      const u32 = (offset: number) => view.getUint32(at + 8 + offset);
      cover(reach, u32(12), u32(16), u32(4), u32(8));
    }
    at += 12 + length;
  }
  return reach;
}

/** A GIF's logical screen, and each image descriptor's frame (left, top, width, height) after it. */
function gifReach(b: Uint8Array): Reach {
  const view = viewOf(b);
  const u16 = (at: number) => view.getUint16(at, true);
  const reach = { width: u16(6), height: u16(8) };
  const colourTable = (flags: number) => (flags & 0x80 ? 3 << ((flags & 7) + 1) : 0);
  let at = 13 + colourTable(b[10]!);
  /** Past a run of data sub-blocks (each a length byte and that many bytes), to after its terminating 0. */
  const skipBlocks = () => {
    while (at < b.length && b[at] !== 0) at += b[at]! + 1;
    at += 1;
  };
  while (at < b.length) {
    const introducer = b[at];
    if (introducer === 0x2c && at + 10 <= b.length) {
      cover(reach, u16(at + 1), u16(at + 3), u16(at + 5), u16(at + 7));
      at += 10 + colourTable(b[at + 9]!) + 1; // the descriptor, its local colour table, the LZW minimum code size
      skipBlocks();
    } else if (introducer === 0x21) {
      at += 2; // an extension: its introducer and label, then its sub-blocks
      skipBlocks();
    } else {
      break; // the trailer (0x3b), or bytes no decoder reads on from
    }
  }
  return reach;
}

/** A BMP's size (a negative height is a top-down image); undefined for one that wraps a PNG or JPEG. */
function bmpReach(b: Uint8Array): Reach | undefined {
  const view = viewOf(b);
  const header = view.getUint32(14, true);
  // OS/2 1.x's BITMAPCOREHEADER: 16-bit sizes, no compression field.
  if (header === 12) return { width: view.getUint16(18, true), height: view.getUint16(20, true) };
  const compression = header >= 20 && b.length >= 34 ? view.getUint32(30, true) : 0;
  if (compression === 4 || compression === 5) return undefined; // BI_JPEG, BI_PNG
  return { width: Math.abs(view.getInt32(18, true)), height: Math.abs(view.getInt32(22, true)) };
}

/**
 * A WebP's canvas (`VP8X`), each animation frame (`ANMF`: offsets in units of 2 pixels, and size) and each bitstream's
 * own size (`VP8 `, `VP8L`, top-level or in a frame); undefined when it has none of them.
 */
function webpReach(b: Uint8Array): Reach | undefined {
  const view = viewOf(b);
  const u24 = (at: number) => b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16);
  const reach = { width: 0, height: 0 };
  const chunks = (from: number, to: number, x: number, y: number) => {
    for (let at = from; at + 8 <= to;) {
      const fourcc = String.fromCharCode(...b.subarray(at, at + 4));
      const length = view.getUint32(at + 4, true);
      const data = at + 8;
      const has = (bytes: number) => length >= bytes && data + bytes <= b.length;
      if (fourcc === 'VP8X' && has(10)) cover(reach, 0, 0, u24(data + 4) + 1, u24(data + 7) + 1);
      else if (fourcc === 'VP8 ' && has(10)) {
        cover(reach, x, y, view.getUint16(data + 6, true) & 0x3fff, view.getUint16(data + 8, true) & 0x3fff);
      } else if (fourcc === 'VP8L' && has(5) && b[data] === 0x2f) {
        const bits = view.getUint32(data + 1, true);
        cover(reach, x, y, (bits & 0x3fff) + 1, ((bits >>> 14) & 0x3fff) + 1);
      } else if (fourcc === 'ANMF' && has(16)) {
        const [left, top] = [u24(data) * 2, u24(data + 3) * 2];
        cover(reach, left, top, u24(data + 6) + 1, u24(data + 9) + 1);
        chunks(data + 16, Math.min(data + length, b.length), left, top);
      }
      at = data + length + (length & 1); // chunks are padded to an even length
    }
  };
  chunks(12, b.length, 0, 0);
  return reach.width > 0 ? reach : undefined;
}

/**
 * Every frame header of a JPEG (SOF0–SOF15 but DHT, JPG and DAC, and a hierarchical image's DHP), its markers walked to
 * the end: past each scan's entropy-coded data (stuffed 0xFF00 bytes and restart markers are part of it), and, as
 * libjpeg does, past stray bytes to the next marker. An EXIF thumbnail sits inside its APP1 segment and is skipped
 * with it. Undefined when it has no frame.
 */
function jpegReach(b: Uint8Array): Reach | undefined {
  const view = viewOf(b);
  const reach = { width: 0, height: 0 };
  let frames = 0;
  let at = 2;
  while (at + 4 <= b.length) {
    if (b[at] !== 0xff) {
      at = b.indexOf(0xff, at);
      if (at < 0) break;
      continue;
    }
    const marker = b[at + 1]!;
    if (marker === 0xff) {
      at += 1; // a fill byte
      continue;
    }
    if (marker === 0xd9) break; // the end of the image
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8)) {
      at += 2; // markers of no segment: TEM, RSTn, SOI
      continue;
    }
    const length = view.getUint16(at + 2);
    const isFrame =
      (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) || marker === 0xde;
    if (isFrame && at + 9 <= b.length) {
      cover(reach, 0, 0, view.getUint16(at + 7), view.getUint16(at + 5));
      frames += 1;
    }
    at += 2 + length;
    if (marker === 0xda) {
      // A scan: its entropy-coded data runs to the next marker that is neither a stuffed 0xFF00 nor a restart.
      for (;;) {
        at = b.indexOf(0xff, at);
        if (at < 0 || at + 1 >= b.length) return frames > 0 ? reach : undefined;
        const next = b[at + 1]!;
        if (next === 0x00 || (next >= 0xd0 && next <= 0xd7)) at += 2;
        else if (next === 0xff) at += 1;
        else break;
      }
    }
  }
  return frames > 0 ? reach : undefined;
}

const megapixels = (pixels: number) => `${(pixels / 1e6).toFixed(1)} megapixels`;
