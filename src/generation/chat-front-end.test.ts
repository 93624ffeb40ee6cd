import { describe, expect, it } from 'vitest';
import { chatRequest } from '../../test/support/chat-request.ts';
import type { ChatEvent, ChatRequest } from '../engine-interface/index.ts';
import type { Vocabulary } from '../grammar/token-bytes.ts';
import { toolFormatOf } from '../tools/tool-call-syntax.ts';
import { generateChat, type TokenChatModel } from './chat-front-end.ts';
import type { GenerationTokenizer } from './generation-tokenizer.ts';
import { generateNativeChoices } from './native-choices.ts';

/** Token 0 ends a reply; the others are letters. */
const STRINGS = ['<eos>', 'a', 'b', 'c', 'd', 'e', 'f'];
const encoder = new TextEncoder();

const tokenizer: GenerationTokenizer = (() => {
  const vocabulary: Vocabulary = {
    strings: STRINGS,
    type: 'raw',
    prependSpace: false,
    special: new Set([0]),
    bytes: STRINGS.map((s) => encoder.encode(s)),
  };
  return {
    decode: (ids) => ids.map((id) => (id === 0 ? '' : STRINGS[id])).join(''),
    vocabulary: () => vocabulary,
    tokenText: () => ({ text: (t) => STRINGS[t]!, bytes: (t) => vocabulary.bytes[t]! }),
    eos: new Set([0]),
    grammars: () => Promise.reject(new Error('no grammar here')),
  };
})();

/** The fake model's next-token logits after `last`: every letter likely, the end less so, a letter's own twice as likely. */
function logitsAfter(last: number | undefined): Float32Array {
  const logits = new Float32Array(STRINGS.length).fill(0);
  logits[0] = -1;
  if (last) logits[last] = Math.log(2);
  return logits;
}

/**
 * A chat model of `rows` rows, faked down to its decode loop: each run steps its rows round-robin, each row's logits
 * from its own last token, and reports `cached(run)` prompt tokens cached (the run's index among the model's runs).
 */
function fakeModel(rows: number, cached: (run: number, prompt: number) => number = () => 0) {
  const runs: number[] = [];
  const encoded: string[] = [];
  const model: TokenChatModel = {
    tokens: tokenizer,
    toolFormat: toolFormatOf(undefined),
    thinks: false,
    contextLength: 64,
    rows,
    generation: { jumpForward: false, promptLookup: false },
    encodeText: (text) => (encoded.push(text), [1, 2, 3]),
    encodeChat: (prompt) => (encoded.push(String(prompt.messages.at(-1)?.content)), [1, 2, 3, 4, 5]),
    run: (steps, prompt) => {
      const run = runs.push(steps.rows) - 1;
      const last: (number | undefined)[] = Array.from({ length: steps.rows });
      for (let step = 0; step < steps.maxNewTokens; step++) {
        for (let row = 0; row < steps.rows; row++) {
          if (!steps.done(row)) last[row] = (steps.next(row, logitsAfter(last[row]), false) as number[]).at(-1);
        }
      }
      return Promise.resolve({ cachedPromptTokens: cached(run, prompt.ids.length) });
    },
  };
  return { model, runs, encoded };
}

const sampled = (overrides: Partial<ChatRequest> = {}) =>
  chatRequest({ n: 3, temperature: 1, topP: 1, seed: 42, maxTokens: 8, ...overrides });

describe('generateChat: the one chat front end', () => {
  it("runs a request's choices in turns on a model of one row, each drawing what it draws beside the others", async () => {
    const batched = fakeModel(Infinity);
    const inTurns = fakeModel(1);
    const events: ChatEvent[] = [];
    const together = await generateChat(batched.model, sampled(), {});
    const apart = await generateChat(inTurns.model, sampled(), { onEvent: (event) => events.push(event) });
    expect(batched.runs).toEqual([3]);
    expect(inTurns.runs).toEqual([1, 1, 1]);
    expect(apart.choices).toEqual(together.choices);
    expect(new Set(together.choices.map((c) => c.text)).size).toBeGreaterThan(1);
    // Each turn's events go out under its choice's index, the last choice's first.
    const finished = events.filter((e) => e.type === 'finish').map((e) => e.choice);
    expect(finished).toEqual([2, 1, 0]);
    for (const [index, choice] of apart.choices.entries()) {
      const text = events.flatMap((e) => (e.type === 'delta' && e.choice === index ? [e.text] : [])).join('');
      expect(text).toBe(choice.text);
    }
    expect(apart.usage).toEqual(together.usage);
  });

  it('counts the prompt once and, as cached, what the first turn found: later turns reuse its own prefill', async () => {
    // The first turn finds 2 tokens cached by an earlier request; each later one finds the prompt it left (all but its
    // last token), as a sequence does.
    const inTurns = fakeModel(1, (run, prompt) => (run === 0 ? 2 : prompt - 1));
    const result = await generateChat(inTurns.model, sampled(), {});
    const completion = result.choices.reduce((sum, c) => sum + c.text.length, 0);
    expect(result.usage.promptTokens).toBe(5);
    expect(result.usage.cachedPromptTokens).toBe(2);
    // Each choice's letters, plus the end token of each that ended on its own.
    const ends = result.choices.filter((c) => c.finishReason === 'stop').length;
    expect(result.usage.completionTokens).toBe(completion + ends);
  });

  it('counts cached tokens alike on an engine that runs whole rows (web-llm) and on one that runs its rows in turns', async () => {
    // The same account: the first run found 2 tokens cached; the later runs report more, from this request's own prompt.
    const found = (run: number) => (run === 0 ? 2 : 4);
    const tokenEngine = await generateChat(fakeModel(1, found).model, sampled({ maxTokens: 2 }), {});
    let run = 0;
    const native = await generateNativeChoices(
      sampled({ maxTokens: 2 }),
      { thinking: false, syntax: toolFormatOf(undefined).syntax, decode: tokenizer.decode, vocabularySize: 7 },
      (_row, _plan, sink) => {
        sink.push([1, 2]);
        sink.end('length', false);
        return Promise.resolve({ promptTokens: 5, cachedPromptTokens: found(run++) });
      },
    );
    expect(tokenEngine.usage.cachedPromptTokens).toBe(2);
    expect(native.usage.cachedPromptTokens).toBe(2);
  });

  it('refuses more choices than a model of several rows decodes, naming n, before tokenizing', async () => {
    const fake = fakeModel(2);
    await expect(generateChat(fake.model, sampled(), {})).rejects.toMatchObject({
      kind: 'invalid_request',
      param: 'n',
    });
    expect(fake.encoded).toEqual([]);
  });

  it('refuses images on a model of text alone, naming the image, before tokenizing', async () => {
    const fake = fakeModel(1);
    const image = {
      url: 'https://example.com/cat.png',
      detail: 'auto',
      at: 4,
      param: 'messages[0].content[1]',
    } as const;
    const request = chatRequest({ messages: [{ role: 'user', content: 'Look', images: [image] }] });
    await expect(generateChat(fake.model, request, {})).rejects.toMatchObject({
      kind: 'invalid_request',
      param: 'messages[0].content[1]',
    });
    expect(fake.encoded).toEqual([]);
  });

  it('tokenizes a raw prompt as text and messages through the template', async () => {
    const fake = fakeModel(1);
    const raw = await generateChat(fake.model, chatRequest({ prompt: 'Once', maxTokens: 1 }), {});
    const chat = await generateChat(fake.model, chatRequest({ maxTokens: 1 }), {});
    expect(fake.encoded[0]).toBe('Once');
    expect([raw.usage.promptTokens, chat.usage.promptTokens]).toEqual([3, 5]);
  });
});
