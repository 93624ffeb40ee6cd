import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../engine-interface/index.ts';
import { HeldConversation, type WebLLMMessage } from './held-conversation.ts';

/** A user turn with an image, as the client sends it and as `webLLMMessages` sends it to web-llm (a new array each time). */
const withImage = (url: string) => ({
  client: {
    role: 'user',
    content: 'What is this?',
    images: [{ url, detail: 'auto', at: 0, param: 'messages[0].content[0]' }],
  } satisfies ChatMessage,
  sent: (): WebLLMMessage => ({
    role: 'user',
    content: [
      { type: 'image_url', image_url: { url } },
      { type: 'text', text: 'What is this?' },
    ],
  }),
});

describe('HeldConversation with images', () => {
  const red = withImage('data:image/png;base64,cmVk');
  const blue = withImage('data:image/png;base64,Ymx1ZQ==');
  const reply = { text: 'A red square.', toolCalls: [] };

  function held() {
    const conversation = new HeldConversation();
    conversation.hold([red.client], reply, [red.sent()], 'A red square.', 40, 5);
    return conversation;
  }
  const next = (first: WebLLMMessage): WebLLMMessage[] => [
    first,
    { role: 'assistant', content: 'A red square.' },
    { role: 'user', content: 'And its shape?' },
  ];

  it('counts the cache of a turn whose image parts are equal to the held ones, as web-llm compares them', () => {
    // web-llm's compareConversationObject compares parts by type, text and URL, not by identity.
    expect(held().cachedFor(next(red.sent()))).toBe(40 + 5 - 1);
  });

  it('counts nothing when the image differs, though the words are the same', () => {
    expect(held().cachedFor(next(blue.sent()))).toBe(0);
  });

  it('sends its own reply back only when the client continues the conversation with the same image', () => {
    const conversation = new HeldConversation();
    conversation.hold([red.client], reply, [red.sent()], '<think>\n\n</think>\n\nA red square.', 40, 5);
    const asked = (first: ChatMessage): ChatMessage[] => [
      first,
      { role: 'assistant', content: 'A red square.', toolCalls: [] },
      { role: 'user', content: 'And its shape?' },
    ];
    expect(conversation.asHeld(asked(red.client))[1]!.content).toBe('<think>\n\n</think>\n\nA red square.');
    expect(conversation.asHeld(asked(blue.client))[1]!.content).toBe('A red square.');
  });
});

describe('HeldConversation across keys', () => {
  it("has web-llm start afresh for a request of another scope, and forgets the other scope's conversation", async () => {
    const conversation = new HeldConversation();
    let resets = 0;
    const reset = async () => void resets++;
    const sent: WebLLMMessage[] = [{ role: 'user', content: 'The PIN is 4829.' }];
    const again = [...sent, { role: 'assistant', content: 'Noted.' }, { role: 'user', content: 'And?' }];
    await conversation.claim('key_a', reset);
    const client: ChatMessage[] = [{ role: 'user', content: 'The PIN is 4829.' }];
    conversation.hold(client, { text: 'Noted.', toolCalls: [] }, sent, 'Noted.', 9, 3);
    await conversation.claim('key_a', reset);
    expect([resets, conversation.cachedFor(again)]).toEqual([1, 11]);
    await conversation.claim('key_b', reset);
    expect([resets, conversation.cachedFor(again)]).toEqual([2, 0]);
    // A reset that fails leaves the conversation key B's: key A's next request tries again.
    await expect(conversation.claim('key_a', () => Promise.reject(new Error('lost')))).rejects.toThrow('lost');
    await conversation.claim('key_a', reset);
    expect(resets).toBe(3);
  });
});

describe('HeldConversation and named turns', () => {
  it("counts a turn sent under another role than web-llm holds as another turn, as web-llm's comparison does", () => {
    // A last assistant turn goes to web-llm as a user's under the assistant's role (`endingWebLLMTakes`).
    const named: WebLLMMessage = { role: 'user', name: '<|im_start|>assistant', content: 'Go on:' };
    const conversation = new HeldConversation();
    const client: ChatMessage[] = [{ role: 'assistant', content: 'Go on:' }];
    conversation.hold(client, { text: 'More.', toolCalls: [] }, [named], 'More.', 9, 3);
    const after = (first: WebLLMMessage) => [
      first,
      { role: 'assistant', content: 'More.' },
      { role: 'user', content: '?' },
    ];
    expect(conversation.cachedFor(after(named))).toBe(11);
    expect(conversation.cachedFor(after({ role: 'assistant', content: 'Go on:' }))).toBe(0);
    expect(conversation.cachedFor(after({ role: 'user', content: 'Go on:' }))).toBe(0);
  });
});
