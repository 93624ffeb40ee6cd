import * as z from 'zod';
import { byteSize, type ChatImage, type ImageLimits } from '../engine-interface/index.ts';
import { invalidRequest } from './errors.ts';
import type { Limits } from './options.ts';
import { optional } from './request-validation.ts';

/*
 * Images in a request's messages, as the chat API (`image_url` parts) and the Responses API (`input_image` parts) send
 * them: each checked here for what can be known without fetching it (its URL's scheme, a data URL's type and size) and
 * the request's image count; what needs the image itself (reaching a URL, decoding, its pixels) is the engine's.
 */

/** OpenAI's `detail`: how finely a model that tiles images may look. */
export const imageDetail = z.enum(['auto', 'low', 'high']);

/**
 * A chat `image_url` part. `image_url` is an object (`{ url, detail }`) on the OpenAI API; LangChain's older messages
 * and some clients send the URL alone, as a string, which vLLM and llama.cpp's server take too.
 */
export const chatImagePart = z.object({
  type: z.literal('image_url'),
  image_url: z.union([z.string(), z.object({ url: z.string(), detail: optional(imageDetail) })]),
});

/** The image limits a handler checks; the engine checks the rest (`ImageRequestLimits`). */
export interface ImagePartLimits {
  maxImages: number;
  maxImageBytes: number;
}

const DATA_URL = /^data:([^;,]*)((?:;[^;,]*)*),/i;

/**
 * An image part's URL, checked: a base64 `data:` URL of an image type within the size limit, or an http(s) URL.
 * `urlParam` names the URL in a refusal (`messages[0].content[1].image_url.url`).
 */
export function checkImageUrl(url: string, urlParam: string, maxBytes: number): void {
  const refuse = (why: string) => invalidRequest(`Invalid '${urlParam}': ${why}`, urlParam, 'invalid_image_url');
  const data = DATA_URL.exec(url);
  if (data) {
    const type = data[1]!.toLowerCase();
    if (!type.startsWith('image/')) {
      throw refuse(
        `expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,iVBORw0KGgo...'), ` +
          `but got ${type ? `the MIME type '${type}'` : 'no MIME type'}.`,
      );
    }
    if (!/;base64$/i.test(data[2]!)) throw refuse('an image data URL must be base64-encoded (`;base64,`).');
    const payload = url.length - data[0].length;
    const bytes = Math.floor((payload * 3) / 4);
    if (payload === 0) throw refuse('the data URL holds no image.');
    if (bytes > maxBytes) {
      throw refuse(`the image is ${byteSize(bytes)}; the limit is ${byteSize(maxBytes)} per image.`);
    }
    return;
  }
  let scheme: string;
  try {
    scheme = new URL(url).protocol;
  } catch {
    throw refuse(`expected an http(s) URL or a base64 data URL of an image, but got ${JSON.stringify(cut(url))}.`);
  }
  if (scheme !== 'http:' && scheme !== 'https:') {
    throw refuse(
      `expected an http(s) URL or a base64 data URL of an image, but got a \`${scheme}\` URL. ` +
        'Send the image itself as a data URL.',
    );
  }
}

/** What a model that reads images takes of each, from the handler's limits: for the engine to apply. */
export const imageLimitsOf = (
  limits: ImagePartLimits &
    Pick<Limits, 'maxImagePixels' | 'maxTotalImagePixels' | 'imageFetchTimeoutMs' | 'imageUrlHosts'>,
): ImageLimits => ({
  maxBytes: limits.maxImageBytes,
  maxPixels: limits.maxImagePixels,
  maxTotalPixels: limits.maxTotalImagePixels,
  fetchTimeoutMs: limits.imageFetchTimeoutMs,
  ...(limits.imageUrlHosts && { urlHosts: limits.imageUrlHosts }),
});

/** Refuses more images in a request than the limit, naming the first one past it. */
export function checkImageCount(messages: readonly { images?: ChatImage[] }[], maxImages: number): void {
  const images = messages.flatMap((m) => m.images ?? []);
  if (images.length > maxImages) {
    const past = images[maxImages]!;
    throw invalidRequest(
      `Too many images: this request has ${images.length}; the limit is ${maxImages}. Send fewer, or describe some.`,
      past.param,
      'too_many_images',
    );
  }
}

/**
 * A message's text and images from its parts, in order: the text parts joined by newlines, each image placed where it
 * stands among them (`at`).
 */
export function textAndImages(parts: ({ text: string } | { image: Omit<ChatImage, 'at'> })[]): {
  content: string;
  images: ChatImage[];
} {
  let content = '';
  let texts = 0;
  const images: ChatImage[] = [];
  for (const part of parts) {
    if ('text' in part) {
      content += (texts++ > 0 ? '\n' : '') + part.text;
    } else {
      images.push({ ...part.image, at: content.length });
    }
  }
  return { content, images };
}

const cut = (s: string) => (s.length > 64 ? `${s.slice(0, 64)}…` : s);
