import { readFileSync } from 'node:fs';
import { toFile } from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import { memoryDocumentStorage } from '../src/document-store/index.ts';
import { sdkClient, type SdkClient } from './support/lantern.ts';

/*
 * What a first visit tries after its first prompt, on the bundled default chat model (crimson-falcon-4, tiny-chat;
 * its conversations also on the thinking model, amber-phoenix-4, tiny-think), through Lantern as an app calls it:
 * held-out cases that scripts/fixtures/conversation_corpus.py writes (test/fixtures/first-impressions.json) in
 * wordings, names, facts and phrasings its training never saw. The bars are the figures a newcomer must see
 * (scripts/fixtures/README.md gives the model's own): a conversation's second and third turns fluent, a passage's
 * answer holding the span that answers, file_search's cited, json_object replies that parse.
 */
interface Cases {
  conversations: { user: string; answer: string }[][];
  grounded: { messages: { role: 'system' | 'user'; content: string }[]; sentence: string; spans: string[] }[];
  file_search: { text: string; question: string; sentence: string; spans: string[] }[];
  json: { role: 'system' | 'user'; content: string }[][];
  /** Every answer tiny-chat learned: a fluent turn gives one of them, whole (not "An ownullid the compmplus 6."). */
  answers: string[];
  /** tiny-think's own known answers, beside tiny-chat's (it answers everyday prompts as tiny-chat does). */
  think_answers: string[];
}

const CASES: Cases = JSON.parse(readFileSync(new URL('./fixtures/first-impressions.json', import.meta.url), 'utf8'));
const MODEL = 'crimson-falcon-4';
const LEARNED = new Set(CASES.answers);

let lantern: SdkClient;
beforeAll(async () => {
  lantern = await sdkClient({ handler: { documents: memoryDocumentStorage() }, client: { maxRetries: 0 } });
});

/** Turns 2 and 3 of the held-out conversations fluent in at least 8 of 10, on `model` (`learned`: its answers). */
async function holdsConversations(model: string, learned: Set<string>): Promise<void> {
  const fluent = { 2: 0, 3: 0 } as Record<number, number>;
  const right = { 2: 0, 3: 0 } as Record<number, number>;
  const transcripts: string[][] = [];
  for (const conversation of CASES.conversations) {
    const messages: { role: 'user' | 'assistant'; content: string }[] = [];
    for (const [index, turn] of conversation.entries()) {
      messages.push({ role: 'user', content: turn.user });
      const reply = await lantern.client.chat.completions.create({ model, messages, temperature: 0, max_tokens: 120 });
      const text = reply.choices[0]!.message.content!.trim();
      // Fluent: ended on its own with a whole answer it learned; right: the answer its intent asks for.
      if (index > 0 && reply.choices[0]!.finish_reason === 'stop' && learned.has(text)) fluent[index + 1]!++;
      if (index > 0 && text === turn.answer) right[index + 1]!++;
      messages.push({ role: 'assistant', content: text });
    }
    transcripts.push(messages.map((m) => `${m.role}: ${m.content}`));
  }
  expect(CASES.conversations).toHaveLength(10);
  expect(fluent[2], transcripts.join('\n')).toBeGreaterThanOrEqual(8);
  expect(fluent[3], transcripts.join('\n')).toBeGreaterThanOrEqual(8);
  console.info(
    `[first impressions] ${model}, turns 2 and 3: fluent ${fluent[2]} and ${fluent[3]}, the intent's answer ${right[2]} and ${right[3]} of 10`,
  );
}

describe(`${MODEL}: a first visit's next prompts, held out`, () => {
  it('keeps a conversation going: turns 2 and 3 fluent in at least 8 of 10 conversations', () =>
    holdsConversations(MODEL, LEARNED));

  // tiny-think thinks first (the content holds the answer alone) and drops earlier turns' thoughts, as Qwen3 does.
  it('keeps a conversation going on the thinking model too (amber-phoenix-4, tiny-think)', () =>
    holdsConversations('amber-phoenix-4', new Set([...CASES.answers, ...CASES.think_answers])));

  // The twelve are few: on 48 more questions of the held-out forms tiny-chat holds the span in 22 (the generator prints
  // them; scripts/fixtures/README.md).
  it('answers a question about a given passage with the span that answers, in at least 9 of 12', async () => {
    const missed: string[] = [];
    for (const { messages, spans } of CASES.grounded) {
      const reply = await lantern.client.chat.completions.create({
        model: MODEL,
        messages,
        temperature: 0,
        max_tokens: 80,
      });
      const text = reply.choices[0]!.message.content!;
      if (!spans.every((span) => text.includes(span))) missed.push(`${messages.at(-1)!.content.slice(-80)} → ${text}`);
    }
    console.log(`[first impressions] ${MODEL}, passage questions: the span in ${12 - missed.length} of 12`);
    expect(CASES.grounded).toHaveLength(12);
    expect(12 - missed.length, missed.join('\n')).toBeGreaterThanOrEqual(9);
  });

  // Not reached yet: over a store of six files (each a source, as Lantern gives every file the search ranks) tiny-chat
  // starts the sentence that answers and loses it (0 of 6 in PyTorch and here; scripts/fixtures/README.md, "What it
  // still does not do"). `it.fails` keeps the measure running: it turns red the day a model reaches the bar, to be made
  // a plain `it` then.
  it.fails(
    'answers from file_search with the span and a citation of the file that holds it, in at least 4 of 6',
    async () => {
      const { client } = lantern;
      const files = await Promise.all(
        CASES.file_search.map(async ({ text }, i) =>
          client.files.create({ file: await toFile(Buffer.from(text), `notes-${i + 1}.txt`), purpose: 'assistants' }),
        ),
      );
      const store = await client.vectorStores.create({ name: 'first impressions', file_ids: files.map((f) => f.id) });
      for (const file of files) await client.vectorStores.files.poll(store.id, file.id, { pollIntervalMs: 20 });
      const missed: string[] = [];
      for (const [i, { question, spans }] of CASES.file_search.entries()) {
        const response = await client.responses.create({
          model: MODEL,
          input: question,
          tools: [{ type: 'file_search', vector_store_ids: [store.id] }],
          temperature: 0,
          max_output_tokens: 80,
        });
        const message = response.output.find((item) => item.type === 'message');
        const part = message?.type === 'message' ? message.content[0] : undefined;
        const text = part?.type === 'output_text' ? part.text : '';
        const cited = part?.type === 'output_text' ? part.annotations : [];
        const right = cited.some((a) => a.type === 'file_citation' && a.file_id === files[i]!.id);
        if (!(right && spans.every((span) => text.includes(span))))
          missed.push(`${question} → ${text} (cited: ${right})`);
      }
      expect(CASES.file_search).toHaveLength(6);
      expect(6 - missed.length, missed.join('\n')).toBeGreaterThanOrEqual(4);
    },
  );

  it('finishes json_object replies that parse as one object in at least 9 of 10', async () => {
    const failed: string[] = [];
    for (const messages of CASES.json) {
      const reply = await lantern.client.chat.completions.create({
        model: MODEL,
        messages,
        response_format: { type: 'json_object' },
        temperature: 0,
        max_tokens: 160,
      });
      const text = reply.choices[0]!.message.content!;
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      const ok = reply.choices[0]!.finish_reason === 'stop' && typeof parsed === 'object' && parsed !== null;
      if (!ok) failed.push(`${messages.at(-1)!.content} → ${text}`);
    }
    expect(CASES.json).toHaveLength(10);
    expect(10 - failed.length, failed.join('\n')).toBeGreaterThanOrEqual(9);
  });
});
