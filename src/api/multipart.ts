import { invalidRequest } from './errors.ts';

/**
 * A `multipart/form-data` body, read whole before (`rateLimit`, `readBodyOf`), as its form: what the openai SDKs send
 * for uploads (a `file` and the other parameters as text fields). `what` names the endpoint in the refusal of
 * another content type.
 */
export async function readForm(request: Request, bytes: Uint8Array, what: string): Promise<FormData> {
  const type = request.headers.get('content-type') ?? '';
  if (!/^multipart\/form-data\s*;/i.test(type)) {
    throw invalidRequest(
      `${what} take \`multipart/form-data\` (a \`file\` and the other parameters as form fields), ` +
        `not ${type ? `\`${type.split(';')[0]}\`` : 'a body without a content type'}.`,
      null,
      'invalid_content_type',
    );
  }
  try {
    return await new Response(bytes as Uint8Array<ArrayBuffer>, { headers: { 'content-type': type } }).formData();
  } catch (error) {
    throw invalidRequest(
      `The multipart/form-data body could not be read (${(error as Error).message}).`,
      null,
      'invalid_multipart',
    );
  }
}

/** A text field of a form: absent is `undefined`; a file where text belongs is refused. */
export function formText(form: FormData, name: string): string | undefined {
  const value = form.get(name);
  if (value === null) return undefined;
  if (typeof value !== 'string') throw invalidRequest(`'${name}' must be a text field, not a file.`, name);
  return value;
}
