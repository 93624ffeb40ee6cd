import { AutoTokenizer, type PreTrainedTokenizer } from '@huggingface/transformers';
import { readFileSync } from 'node:fs';

/**
 * What fits a model: its context window, read from its own files as the engine reads it, and conversations of a
 * given length in its own tokens. A benchmark that sizes a prompt by guess breaks when a fixture's tokenizer changes
 * (the bundled tiny-chat's retraining turned a "900-token" history into 1,115 tokens, over its 1,024-token window).
 */

/** A chat message as the benchmarks send it. */
export interface Message {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/**
 * The context window of the model at `folder`, prompt and completion together: `max_position_embeddings` of its
 * config.json, else the tokenizer's `model_max_length` (what src/engines/transformers/chat-model.ts uses).
 */
export function contextWindow(folder: string): number {
  const read = (file: string) => JSON.parse(readFileSync(`${folder}/${file}`, 'utf8')) as Record<string, unknown>;
  const fromConfig = read('config.json').max_position_embeddings;
  if (typeof fromConfig === 'number' && fromConfig > 0) return fromConfig;
  const fromTokenizer = read('tokenizer_config.json').model_max_length;
  if (typeof fromTokenizer === 'number' && fromTokenizer > 0 && Number.isSafeInteger(fromTokenizer)) {
    return fromTokenizer;
  }
  throw new Error(`${folder}: neither config.json nor tokenizer_config.json says the model's context window.`);
}

export const loadTokenizer = (folder: string): Promise<PreTrainedTokenizer> =>
  AutoTokenizer.from_pretrained(folder, { local_files_only: true } as never);

/** The prompt tokens of `messages` as the engine counts them: the chat template with the generation prompt. */
export function promptTokens(tokenizer: PreTrainedTokenizer, messages: readonly Message[]): number {
  const text = tokenizer.apply_chat_template(messages as never, { tokenize: false, add_generation_prompt: true });
  return tokenizer.encode(text as string, { add_special_tokens: false }).length;
}

/** The most tokens a reply to `messages` can have on a model of window `window` (at least 0). */
export function replyRoom(tokenizer: PreTrainedTokenizer, window: number, messages: readonly Message[]): number {
  return Math.max(0, window - promptTokens(tokenizer, messages));
}

/** The most tokens a reply to `messages` can have on the model at `folder`. */
export async function replyRoomAt(folder: string, messages: readonly Message[]): Promise<number> {
  return replyRoom(await loadTokenizer(folder), contextWindow(folder), messages);
}

/** The words of the system prompt and of each turn (before the last, which takes whatever room is left). */
const SYSTEM_WORDS = 40;
const TURN_WORDS = 120;

/**
 * A conversation (a system prompt, then user and assistant turns, ending on a user turn) whose prompt is exactly
 * `tokens` tokens on `tokenizer`, or as close below as the words allow; never more, unless even one user turn of one
 * word is longer. Made of `words` in turn from a place set by `seed`, so each seed gives another conversation.
 */
export function history(
  tokenizer: PreTrainedTokenizer,
  words: readonly string[],
  tokens: number,
  seed: number,
): Message[] {
  if (words.length === 0) throw new Error('history() needs words to write with.');
  // The words from the shortest in tokens: the last gap is closed with them.
  const shortest = [...new Set(words)]
    .map((word) => ({ word, tokens: tokenizer.encode(` ${word}`, { add_special_tokens: false }).length }))
    .sort((a, b) => a.tokens - b.tokens || a.word.length - b.word.length)
    .slice(0, 64)
    .map(({ word }) => word);
  const finalWord = shortest[0]!;
  let cursor = seed * 7919;
  const text = (from: number, count: number) =>
    Array.from({ length: count }, (_, i) => words[(from + i) % words.length]).join(' ');
  const messages: Message[] = [];
  /**
   * Appends a turn of `role` holding as many of the next words as fit (at most `cap`), leaving room for a one-word
   * user turn after it when `reserveUser`. Returns how many words it holds (none: no turn is added).
   */
  const fill = (role: Message['role'], cap: number, reserveUser: boolean): number => {
    const fits = (count: number) => {
      const turn: Message = { role, content: text(cursor, count) };
      const after: Message[] = reserveUser ? [{ role: 'user', content: finalWord }] : [];
      return promptTokens(tokenizer, [...messages, turn, ...after]) <= tokens;
    };
    if (!fits(1)) return 0;
    // The prompt grows with the words (tokenizers split text at spaces first): the most that fit, by bisection.
    let [low, high] = [1, cap];
    while (low < high) {
      const mid = Math.ceil((low + high) / 2);
      if (fits(mid)) low = mid;
      else high = mid - 1;
    }
    messages.push({ role, content: text(cursor, low) });
    cursor += low;
    return low;
  };

  fill('system', SYSTEM_WORDS, true);
  // Full user and assistant turns while they fit; the first turn that does not fill up is the last.
  for (;;) {
    if (fill('user', TURN_WORDS, false) < TURN_WORDS) break;
    if (fill('assistant', TURN_WORDS, true) === 0) break;
  }
  // The conversation ends on a user turn: one of the shortest word when the last turn was not the user's (there is
  // room for it: every turn before left that room).
  if (messages.at(-1)?.role !== 'user') messages.push({ role: 'user', content: finalWord });
  // Close the last gap with the shortest words, while one still fits.
  const last = messages.at(-1)!;
  let current = promptTokens(tokenizer, messages);
  while (current < tokens) {
    const before = last.content;
    const grown = shortest.some((word) => {
      last.content = `${before} ${word}`;
      const after = promptTokens(tokenizer, messages);
      if (after <= tokens && after > current) {
        current = after;
        return true;
      }
      last.content = before;
      return false;
    });
    if (!grown) break;
  }
  return messages;
}

/**
 * The longest history (in tokens) that leaves room for a conversation's next steps on a model of window `window`:
 * a reply of `replyTokens`, then (with `followUp`) that reply as an assistant turn, a user turn saying `followUp`, and
 * a reply of `nextReplyTokens`. Measured on the model's own template; a reply re-encoded may take more tokens than
 * were generated, so it counts twice.
 */
export function historyRoom(
  tokenizer: PreTrainedTokenizer,
  window: number,
  plan: { replyTokens: number; followUp?: string; nextReplyTokens?: number },
): number {
  const base: Message[] = [{ role: 'user', content: 'x' }];
  const secondTurn = plan.followUp
    ? promptTokens(tokenizer, [...base, { role: 'assistant', content: '' }, { role: 'user', content: plan.followUp }]) -
      promptTokens(tokenizer, base) +
      2 * plan.replyTokens +
      (plan.nextReplyTokens ?? 0)
    : 0;
  return Math.max(0, window - Math.max(plan.replyTokens, secondTurn));
}
