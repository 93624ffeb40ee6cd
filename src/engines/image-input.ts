import { byteSize, EngineError, throwIfAborted, type ChatImage, type ImageLimits } from '../engine/index.ts';

/** An image's bytes, checked: a format the decoders read, and its size from its header, within the pixel limit. */
export interface ImageBytes {
  bytes: Uint8Array;
  /** Its MIME type, from its header (`image/png`). */
  type: string;
  width: number;
  height: number;
}

const FORMATS = 'PNG, JPEG, GIF, WebP or BMP';

/**
 * A request's image as bytes the model's decoder can take: a data URL's payload, or an http(s) URL fetched as the page
 * would fetch it (the realm's origin, its CORS rules, cookies only for its own origin), within the size limit and the
 * timeout. Its width and height are read from its header before anything decodes it, so that an image of more pixels
 * than the limit (a decompression bomb: a small PNG that claims 50,000 × 50,000) is refused without being decoded.
 * Every failure is a 400 naming the image's part, with the reason (the URL's status, a timeout, a network or CORS
 * failure, an unknown format); an abort of the request is passed on as such.
 */
export async function readImage(image: ChatImage, limits: ImageLimits, signal?: AbortSignal): Promise<ImageBytes> {
  const refuse = (why: string) => new EngineError('invalid_request', why, { param: image.param });
  const bytes = image.url.startsWith('data:')
    ? fromDataUrl(image.url, refuse)
    : await fetchImage(image.url, limits, refuse, signal);
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

async function fetchImage(
  url: string,
  limits: ImageLimits,
  refuse: (why: string) => EngineError,
  signal: AbortSignal | undefined,
): Promise<Uint8Array> {
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
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = response.body!.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > limits.maxBytes) {
        await reader.cancel().catch(() => {});
        throw refuse(`The image at ${url} is over the limit of ${byteSize(limits.maxBytes)} per image.`);
      }
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof EngineError) throw error;
    throw failed(error);
  }
  throwIfAborted(signal);
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return bytes;
}

/** The format and size an image's header declares, for the formats browsers and sharp both decode; else undefined. */
export function imageHeader(b: Uint8Array): Omit<ImageBytes, 'bytes'> | undefined {
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const ascii = (at: number, length: number) => String.fromCharCode(...b.subarray(at, at + length));
  if (b.length >= 24 && ascii(1, 3) === 'PNG' && ascii(12, 4) === 'IHDR') {
    return { type: 'image/png', width: view.getUint32(16), height: view.getUint32(20) };
  }
  if (b.length >= 10 && (ascii(0, 6) === 'GIF87a' || ascii(0, 6) === 'GIF89a')) {
    return { type: 'image/gif', width: view.getUint16(6, true), height: view.getUint16(8, true) };
  }
  if (b.length >= 26 && ascii(0, 2) === 'BM') {
    return { type: 'image/bmp', width: Math.abs(view.getInt32(18, true)), height: Math.abs(view.getInt32(22, true)) };
  }
  if (b.length >= 30 && ascii(0, 4) === 'RIFF' && ascii(8, 4) === 'WEBP') {
    const chunk = ascii(12, 4);
    if (chunk === 'VP8 ')
      return {
        type: 'image/webp',
        width: view.getUint16(26, true) & 0x3fff,
        height: view.getUint16(28, true) & 0x3fff,
      };
    if (chunk === 'VP8L') {
      const bits = view.getUint32(21, true);
      return { type: 'image/webp', width: (bits & 0x3fff) + 1, height: ((bits >> 14) & 0x3fff) + 1 };
    }
    if (chunk === 'VP8X') {
      const u24 = (at: number) => b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16);
      return { type: 'image/webp', width: u24(24) + 1, height: u24(27) + 1 };
    }
    return undefined;
  }
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xd8) {
    // JPEG: the frame header (a start-of-frame marker, not a table's) holds the size.
    let at = 2;
    while (at + 9 < b.length) {
      if (b[at] !== 0xff) return undefined;
      const marker = b[at + 1]!;
      if (marker === 0xff) {
        at += 1;
        continue;
      }
      const length = view.getUint16(at + 2);
      const isFrame = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
      if (isFrame) return { type: 'image/jpeg', width: view.getUint16(at + 7), height: view.getUint16(at + 5) };
      at += 2 + length;
    }
  }
  return undefined;
}

const megapixels = (pixels: number) => `${(pixels / 1e6).toFixed(1)} megapixels`;
