import { bytesToHex } from '@noble/hashes/utils.js';
import { BoundedCache } from '../../grammar/bounded-cache.ts';

/**
 * How many images' ids are remembered. An id only needs to outlive the cached prefixes holding it: an image whose
 * digest was forgotten gets a new id when it comes back, and the prefixes cached with its old one stop matching (a
 * miss, never a wrong answer). 4,096 is more images than a real model's prefix cache holds (an image takes hundreds of
 * positions of tens of kilobytes each: the default 256 MiB holds a few dozen), and costs about half a megabyte.
 */
const MAX_IMAGE_IDS = 4096;

/** The id given to each image digest remembered, most recently used last. */
const ids = new BoundedCache<string, number>(MAX_IMAGE_IDS);

/**
 * The next id never given: counting up, never reused, so no two images share one. A prompt's image positions are
 * numbered from it (times the positions an image takes): numbers stay exact until about 2^53 / 10^4 images.
 */
let nextId = 0;

/**
 * What a prompt's positions of an image are keyed by in the prefix cache: the same number for the same bytes (its
 * SHA-256 digest remembered), so that the next turn of a conversation reuses the prefix holding its image, and a number
 * no other image ever gets. Issue 41: a 32-bit FNV-1a hash of the bytes used to be the key, and two images that an
 * attacker made collide (about 30,000 tries appending bytes) were answered as one another.
 *
 * @example
 * (await imageId(png)) === (await imageId(png.slice())); // true
 * (await imageId(png)) !== (await imageId(otherPng)); // true, for every other image
 */
export async function imageId(bytes: Uint8Array): Promise<number> {
  const digest = bytesToHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>)));
  return ids.getOrCreate(digest, () => nextId++);
}
