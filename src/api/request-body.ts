import { readAtMost } from '../bytes/byte-chunks.ts';
import { EngineError } from '../engine-interface/index.ts';
import { ApiError, invalidRequest } from './errors.ts';

const NOT_JSON =
  'We could not parse the JSON body of your request. The API expects a JSON object; what was sent was not valid JSON.';

/** Parses a request body (read whole by {@link readBody}) as a JSON object, or refuses it with a 400. */
export function parseJsonObject(bytes: Uint8Array): Record<string, unknown> {
  if (bytes.byteLength === 0) throw invalidRequest(`${NOT_JSON} The body was empty.`, null, 'invalid_json');

  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw invalidRequest(`${NOT_JSON} The body is not valid UTF-8.`, null, 'invalid_json');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw invalidRequest(`${NOT_JSON} (${(error as Error).message})`, null, 'invalid_json');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalidRequest('The request body must be a JSON object.', null, 'invalid_json');
  }
  return value as Record<string, unknown>;
}

/**
 * Reads a request's body whole, refusing more than `maxBytes` before buffering it, and a body that takes longer than
 * `timeoutMs` to arrive: a declared Content-Length over the limit is refused unread, a streamed body is cut off as soon
 * as it passes the limit or the deadline, and a body that a browser offers only whole (Firefox has no `Request.body`
 * stream) is measured before it is read.
 *
 * @param onBytes - told the bytes read so far as they grow (a Blob's size at once); an {@link ApiError} it throws
 * refuses the body there, unread further.
 */
export async function readBody(
  request: Request,
  maxBytes: number,
  timeoutMs = Infinity,
  onBytes?: (size: number) => void,
): Promise<Uint8Array> {
  const tooLarge = () =>
    invalidRequest(`The request body is larger than the limit of ${maxBytes} bytes.`, null, 'request_too_large');
  const declared = Number(request.headers.get('content-length'));
  if (declared > maxBytes) throw tooLarge();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<'late'>((resolve) => {
    if (Number.isFinite(timeoutMs)) timer = setTimeout(() => resolve('late'), timeoutMs);
  });
  const reader = request.body?.getReader();
  // A body that breaks off is a client that went away (a closed connection, an aborted fetch): nobody to answer, and
  // no fault of the server's to report.
  const gone = (error: unknown) => {
    if (error instanceof ApiError) throw error;
    throw new EngineError('aborted', 'The client went away before its request body arrived.', { cause: error });
  };
  try {
    const read =
      request.body === undefined
        ? readBlob(request, maxBytes, onBytes)
        : reader
          ? readAtMost(reader, maxBytes, onBytes)
          : Promise.resolve(new Uint8Array(0));
    const bytes = await Promise.race([read.catch(gone), deadline]);
    if (bytes === 'late') {
      await reader?.cancel().catch(() => {});
      throw invalidRequest(
        `The request body took longer than ${timeoutMs / 1000} s to arrive. Send it again at once, or smaller.`,
        null,
        'request_timeout',
      );
    }
    if (bytes === undefined) throw tooLarge();
    return bytes;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Reads the body of a Request that has no `body` stream: Firefox (153 ESR) does not implement `Request.body`, so a
 * service worker there sees `undefined`. The body becomes a Blob, whose size is known before its bytes are read into
 * memory, so the limit still holds. Answers undefined when the body is over `maxBytes`.
 */
async function readBlob(
  request: Request,
  maxBytes: number,
  onBytes?: (size: number) => void,
): Promise<Uint8Array | undefined> {
  const blob = await request.blob();
  if (blob.size > maxBytes) return undefined;
  onBytes?.(blob.size);
  return new Uint8Array(await blob.arrayBuffer());
}
