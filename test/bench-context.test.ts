import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  contextWindow,
  history,
  historyRoom,
  loadTokenizer,
  promptTokens,
  replyRoomAt,
  type Message,
} from '../bench/context.ts';
import { BUNDLED_CHAT, ENGLISH } from '../bench/realistic-bench.ts';
import { singleModelProfile } from '../bench/realistic-model.ts';
import { ENDLESS_MESSAGES } from '../bench/requests.ts';
import { createEngine } from '../src/index.ts';
import { chatRequest } from './support/chat-request.ts';
import { HAS_STORIES_260K, STORIES_260K } from './support/lantern.ts';

/**
 * The bench sizes its prompts with the model's own tokenizer and window (bench/context.ts): a history asked for N
 * tokens is N tokens as the engine counts them, never more, and no request of the bench overflows a model's window.
 */
const MODELS = [
  { name: 'tiny-chat', folder: BUNDLED_CHAT },
  ...(HAS_STORIES_260K ? [{ name: 'stories260K', folder: STORIES_260K }] : []),
];

describe.each(MODELS)('the bench on $name', ({ folder }) => {
  it('reads the context window from config.json', () => {
    const config = JSON.parse(readFileSync(`${folder}/config.json`, 'utf8')) as { max_position_embeddings: number };
    expect(contextWindow(folder)).toBe(config.max_position_embeddings);
  });

  it('writes histories of exactly the tokens asked for, ending on a user turn', async () => {
    const tokenizer = await loadTokenizer(folder);
    const shortest = promptTokens(tokenizer, [{ role: 'user', content: 'a' }]);
    const window = contextWindow(folder);
    for (const tokens of [shortest, shortest + 1, 37, 100, 257, 512, 900, window - 40]) {
      for (const seed of [1, 2, 3]) {
        const messages = history(tokenizer, ENGLISH, tokens, seed);
        expect(promptTokens(tokenizer, messages), `${tokens} tokens, seed ${seed}`).toBe(tokens);
        expect(messages.at(-1)!.role).toBe('user');
        // Turns alternate after the system prompt, as chat templates expect.
        const turns = messages.filter((m) => m.role !== 'system');
        turns.forEach((m, i) => expect(m.role).toBe(i % 2 === 0 ? 'user' : 'assistant'));
      }
    }
  });

  it('counts a history as the engine does, and leaves room for the next turn', async () => {
    const tokenizer = await loadTokenizer(folder);
    const window = contextWindow(folder);
    const plan = { replyTokens: 16, followUp: 'and what comes next', nextReplyTokens: 4 };
    const room = historyRoom(tokenizer, window, plan);
    expect(room).toBeGreaterThan(0);
    expect(room).toBeLessThan(window);
    const engine = createEngine({ profile: singleModelProfile('m', folder) });
    const messages: Message[] = history(tokenizer, ENGLISH, room, 1);
    const first = await engine.chat(
      'm',
      chatRequest({ messages, maxTokens: plan.replyTokens, logitBias: { 0: -100, 1: -100, 2: -100 } }),
    );
    expect(first.usage.promptTokens).toBe(room);
    // The reply and a follow-up fit, with the follow-up's reply: no context_length_exceeded.
    const next: Message[] = [
      ...messages,
      { role: 'assistant', content: first.choices[0]!.text },
      { role: 'user', content: plan.followUp },
    ];
    const second = await engine.chat('m', chatRequest({ messages: next, maxTokens: plan.nextReplyTokens }));
    expect(second.usage.promptTokens + plan.nextReplyTokens).toBeLessThanOrEqual(window);
  });

  it("leaves the bench's endless prompt the window less its own tokens", async () => {
    const tokenizer = await loadTokenizer(folder);
    expect(await replyRoomAt(folder, ENDLESS_MESSAGES)).toBe(
      contextWindow(folder) - promptTokens(tokenizer, ENDLESS_MESSAGES),
    );
  });
});

it('never writes a history over the tokens asked for, whatever the words', async () => {
  const tokenizer = await loadTokenizer(BUNDLED_CHAT);
  // Long words only (several tokens each): the last gap may stay open, but is never overshot.
  const long = ['lanterns', 'children', 'morning', 'steadily', 'shining'];
  for (let tokens = 40; tokens < 1000; tokens += 97) {
    const length = promptTokens(tokenizer, history(tokenizer, long, tokens, tokens));
    expect(length).toBeLessThanOrEqual(tokens);
    expect(length).toBeGreaterThan(tokens - 8);
  }
});
