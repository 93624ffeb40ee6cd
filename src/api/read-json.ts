import { invalidRequest } from './errors.ts';

const NOT_JSON =
  'We could not parse the JSON body of your request. The API expects a JSON object; what was sent was not valid JSON.';

/**
 * Reads a request body as a JSON object, refusing more than `maxBytes` before buffering it: a declared
 * Content-Length over the limit is refused unread, and a streamed body is cut off as soon as it passes the limit.
 */
export async function readJsonObject(request: Request, maxBytes: number): Promise<Record<string, unknown>> {
  const tooLarge = () =>
    invalidRequest(`The request body is larger than the limit of ${maxBytes} bytes.`, null, 'request_too_large');
  const declared = Number(request.headers.get('content-length'));
  if (declared > maxBytes) throw tooLarge();

  const chunks: Uint8Array[] = [];
  let size = 0;
  if (request.body) {
    const reader = request.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel().catch(() => {});
        throw tooLarge();
      }
      chunks.push(value);
    }
  }
  if (size === 0) throw invalidRequest(`${NOT_JSON} The body was empty.`, null, 'invalid_json');

  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }

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
