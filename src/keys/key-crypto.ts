/** Key generation and hashing on Web Crypto, available alike in Node, pages, workers and service workers. */

export const KEY_PREFIX = 'lt_';

/** 32 random bytes: twice the 128 bits a key needs, so guessing stays hopeless at any request rate. */
const KEY_BYTES = 32;

/** How much of a key `KeyInfo.prefix` shows: the `lt_` and 6 characters, 36 bits, too few to help an attacker. */
const SHOWN_PREFIX_LENGTH = KEY_PREFIX.length + 6;

export function generateKey(): string {
  return KEY_PREFIX + base64url(crypto.getRandomValues(new Uint8Array(KEY_BYTES)));
}

export function generateKeyId(): string {
  return 'key_' + base64url(crypto.getRandomValues(new Uint8Array(12)));
}

export function shownPrefix(key: string): string {
  return key.slice(0, SHOWN_PREFIX_LENGTH) + '…';
}

/** SHA-256 of the key, hex encoded: what the store keeps. */
export async function hashKey(key: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(key));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** Compares two strings in time that depends only on their lengths, never on where they first differ. */
export function timingSafeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

export function base64url(bytes: Uint8Array): string {
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}
