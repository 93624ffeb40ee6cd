import { bytesToBase64 } from '../base64.ts';
import { invalidRequest } from '../errors.ts';

/*
 * What a compaction item carries. OpenAI encrypts it, for its own servers to read back; here the client and the model
 * are on the same side, so nothing is hidden from the app: the summary is base64 of a small JSON object, opaque to
 * clients as OpenAI's is (they pass it back unread) and readable for debugging. A version field lets a later format
 * refuse an old one clearly instead of misreading it.
 */

const VERSION = 1;

/** The summary of the items a compaction replaced, as the `encrypted_content` of its item. */
export function encodeCompaction(summary: string): string {
  return bytesToBase64(new TextEncoder().encode(JSON.stringify({ lantern_compaction: VERSION, summary })));
}

/** The summary a compaction item carries, or a 400 naming the item when it was not made by this API. */
export function decodeCompaction(content: string, param: string): string {
  try {
    const bytes = Uint8Array.from(atob(content), (c) => c.charCodeAt(0));
    const data = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) as unknown;
    if (typeof data === 'object' && data !== null) {
      const { lantern_compaction: version, summary } = data as Record<string, unknown>;
      if (version === VERSION && typeof summary === 'string') return summary;
    }
  } catch {
    // Answered below: whatever failed, the content is not one of ours.
  }
  throw invalidRequest(
    `Invalid '${param}.encrypted_content': it is not a compaction made by this server's \`/v1/responses/compact\` ` +
      '(compaction items of another provider cannot be read here). Send the conversation itself instead.',
    `${param}.encrypted_content`,
  );
}
