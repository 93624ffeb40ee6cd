/** Identifiers this API mints: `req_…` for requests (the `x-request-id` header), `chatcmpl-…` for completions. */

export function newRequestId(): string {
  return 'req_' + crypto.randomUUID().replace(/-/g, '');
}

export function newCompletionId(): string {
  return 'chatcmpl-' + crypto.randomUUID().replace(/-/g, '');
}

/** `call_…`, 24 characters after the prefix, as OpenAI's tool call ids. */
export function newToolCallId(): string {
  return 'call_' + crypto.randomUUID().replace(/-/g, '').slice(0, 24);
}
