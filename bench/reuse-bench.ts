import type OpenAI from 'openai';
import { performance } from 'node:perf_hooks';
import { createEngine, createHandler, KeyRing } from '../src/index.ts';
import { openaiClient } from '../test/support/lantern.ts';
import { contextWindow, history, historyRoom, loadTokenizer } from './context.ts';
import { singleModelProfile } from './realistic-model.ts';
import { median, round } from './stats.ts';

/**
 * Second-turn time to first token with prefix reuse against full recompute, through the /v1 handler in Node (openai
 * SDK, SSE): a conversation with a long history gets a reply, then the client sends the next turn (the history, that
 * reply, a new question). One engine keeps its prefix cache (the default), the other has it off (`prefixCacheBytes:
 * 0`) and prefills the whole prompt again. Each sample is a new conversation; the two engines alternate who goes first.
 */
const ID = 'reuse-bench';
/** Special tokens (ids 0–2 in every model here, the end-of-reply ones among them) are banned: replies run to length. */
const BANNED = { 0: -100, 1: -100, 2: -100 };
const REPLY_TOKENS = 16;
/** The second turn's reply: a few tokens, of which only the first is timed. */
const SECOND_REPLY_TOKENS = 4;
const QUESTION = 'and what comes next';

type Message = OpenAI.ChatCompletionMessageParam;

async function client(folder: string, prefixCacheBytes?: number) {
  const keys = new KeyRing();
  const handler = createHandler({
    engine: createEngine({ profile: singleModelProfile(ID, folder, prefixCacheBytes) }),
    keys,
  });
  return openaiClient(handler, (await keys.issue('reuse bench')).key, { maxRetries: 0 });
}

/** Time to the first streamed token of a request, with what its usage says. */
async function firstToken(sdk: OpenAI, messages: Message[]) {
  const started = performance.now();
  let first = NaN;
  let usage: OpenAI.CompletionUsage | undefined;
  const stream = await sdk.chat.completions.create({
    model: ID,
    messages,
    temperature: 0,
    max_tokens: SECOND_REPLY_TOKENS,
    logit_bias: BANNED,
    stream: true,
    stream_options: { include_usage: true },
  });
  for await (const chunk of stream) {
    if (chunk.choices[0]?.delta.content && Number.isNaN(first)) first = performance.now() - started;
    if (chunk.usage) usage = chunk.usage;
  }
  return { ms: first, promptTokens: usage!.prompt_tokens, cached: usage!.prompt_tokens_details?.cached_tokens ?? 0 };
}

export interface ReuseResult {
  /** Tokens of the first turn's prompt: the history. */
  historyTokens: number;
  /** The history asked for, and the longest that leaves room in the model's window for both turns' replies. */
  requestedHistoryTokens: number;
  historyRoom: number;
  /** Tokens of the second turn's prompt, and how many of them the reusing engine took from its cache (median). */
  promptTokens: number;
  cachedTokens: number;
  reuseTtftP50: number;
  recomputeTtftP50: number;
  /** Median over samples of recompute ÷ reuse time to first token (target ≥ 3). */
  speedup: number;
}

/**
 * Measures reuse on the model at `folder`, with histories of `tokens` tokens made of `words` (fewer when the model's
 * context window has no room for that many with both turns' replies).
 */
export async function reuseBench(folder: string, words: readonly string[], tokens: number, samples: number) {
  const tokenizer = await loadTokenizer(folder);
  const room = historyRoom(tokenizer, contextWindow(folder), {
    replyTokens: REPLY_TOKENS,
    followUp: QUESTION,
    nextReplyTokens: SECOND_REPLY_TOKENS,
  });
  const historyTokens = Math.min(tokens, room);
  const [reuse, recompute] = await Promise.all([client(folder), client(folder, 0)]);
  const warm: Message[] = [{ role: 'user', content: words.slice(0, 8).join(' ') }];
  await Promise.all([firstToken(reuse, warm), firstToken(recompute, warm)]);
  const runs: { reuse: Awaited<ReturnType<typeof firstToken>>; recompute: Awaited<ReturnType<typeof firstToken>> }[] =
    [];
  let measured = 0;
  for (let sample = 0; sample < samples; sample++) {
    const messages: Message[] = history(tokenizer, words, historyTokens, sample + 1);
    const turn = await reuse.chat.completions.create({
      model: ID,
      messages,
      temperature: 0,
      max_tokens: REPLY_TOKENS,
      logit_bias: BANNED,
    });
    measured = turn.usage!.prompt_tokens;
    if (measured > historyTokens) {
      throw new Error(`A history of ${historyTokens} tokens by the bench's count is ${measured} by the engine's.`);
    }
    messages.push(
      { role: 'assistant', content: turn.choices[0]!.message.content },
      { role: 'user', content: QUESTION },
    );
    if (sample % 2 === 0) {
      const a = await firstToken(reuse, messages);
      runs.push({ reuse: a, recompute: await firstToken(recompute, messages) });
    } else {
      const b = await firstToken(recompute, messages);
      runs.push({ reuse: await firstToken(reuse, messages), recompute: b });
    }
  }
  return {
    historyTokens: measured,
    requestedHistoryTokens: tokens,
    historyRoom: room,
    promptTokens: runs[0]!.reuse.promptTokens,
    cachedTokens: Math.round(median(runs.map((r) => r.reuse.cached))),
    reuseTtftP50: round(median(runs.map((r) => r.reuse.ms))),
    recomputeTtftP50: round(median(runs.map((r) => r.recompute.ms))),
    speedup: round(median(runs.map((r) => r.recompute.ms / r.reuse.ms)), 1),
  } satisfies ReuseResult;
}
