import type { ChatImage, ChatMessage } from './types.ts';

/** A piece of a turn, in the client's order: text, or an image. */
export type MessagePart = { type: 'text'; text: string } | { type: 'image'; image: ChatImage };

/**
 * A turn's text and images in the order the client sent them (each image where `at` places it in `content`), for what
 * renders them again: a server's wire, a vision model's template. Empty text between images is left out.
 */
export function messageParts(message: ChatMessage): MessagePart[] {
  const parts: MessagePart[] = [];
  let from = 0;
  const text = (to: number) => {
    if (to > from) parts.push({ type: 'text', text: message.content.slice(from, to) });
    from = to;
  };
  for (const image of message.images ?? []) {
    text(image.at);
    parts.push({ type: 'image', image });
  }
  text(message.content.length);
  return parts;
}
