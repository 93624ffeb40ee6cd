/**
 * Identifiers this API mints: `req_…` for requests (the `x-request-id` header), `chatcmpl-…` for completions, `fp_…`
 * for the `system_fingerprint` of a model, and the ids of the other objects ({@link newId}).
 */
import type { ModelCard } from '../engine-interface/index.ts';

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

/**
 * A new id of an object of the OpenAI API, with its prefix: `cmpl-` a text completion, `resp_` a response, `msg_` an
 * output message, `fc_` a function call item, `call_` the call id its output refers to, `fs_` a file search item.
 */
export function newId(prefix: 'cmpl-' | 'resp_' | 'msg_' | 'fc_' | 'call_' | 'rs_' | 'fs_' | 'cmp_'): string {
  return prefix + crypto.randomUUID().replace(/-/g, '');
}

/**
 * The `system_fingerprint` of a model's answers: a hash of what the handler knows of it (its ID, its publication date
 * and its owner), so it is the same for every answer of that model and changes when the app publishes another. Which
 * candidate of the model's fallback chain answers is known only inside the engine, which does not say before the first
 * chunk goes out, so it is not part of it.
 */
export function systemFingerprint(card: Pick<ModelCard, 'id' | 'created'>, ownedBy: string): string {
  // FNV-1a, 32 bits: a stable label, not a secret.
  let hash = 0x811c9dc5;
  for (const char of `${ownedBy}\u0000${card.id}\u0000${card.created}`) {
    hash = Math.imul(hash ^ char.codePointAt(0)!, 0x01000193) >>> 0;
  }
  return 'fp_' + hash.toString(16).padStart(8, '0');
}
