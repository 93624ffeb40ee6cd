import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundledProfile, EngineError, withEngines, type ChatResult } from '../src/index.ts';
import type { ChatModel } from '../src/engines/model-loaders.ts';
import { TaskQueue } from '../src/engines/task-queue.ts';
import { ggufParts, LLAMA_CPP_ENGINE, type LlamaCppCandidate } from '../src/engines/llama-cpp/llama-cpp-engine.ts';
import { readFileSync } from 'node:fs';
import { getLlama, type Token } from 'node-llama-cpp';
import { seededRandom } from '../src/generation/seeded-random.ts';
import { readGgufMetadata } from '../src/engines/llama-cpp/gguf-metadata.ts';
import { ggufVocabulary, vocabularyDecoder } from '../src/engines/llama-cpp/gguf-vocabulary.ts';
import { createSequencesContext, loadChatModel } from '../src/engines/llama-cpp/node-llama-runtime.ts';
import type { LlamaChatModel } from '../src/engines/llama-cpp/llama-chat-model.ts';
import { chatRequest } from './support/chat-request.ts';
import {
  BUNDLED_MODELS,
  HAS_STORIES_260K,
  reference,
  STORIES_260K,
  testProfile,
  type ChatReference,
} from './support/lantern.ts';

/**
 * llama.cpp's own parts, on the bundled chat model's GGUF (scripts/fixtures/gguf_convert.py, the same weights as its
 * ONNX): how its sequences batch, keep prefixes and refuse what they cannot hold. The shared behaviour (the wire, the
 * clients, structured output, tools, reasoning) runs on it in the `llama.cpp` test project.
 */
const tinyChat: LlamaCppCandidate = {
  engine: 'llama.cpp',
  model: `${BUNDLED_MODELS}/tiny-chat`,
  file: 'gguf/tiny-chat-f32.gguf',
};
const refs = reference<ChatReference[]>('tiny-chat');
const load = (candidate: LlamaCppCandidate) =>
  loadChatModel(candidate, { id: 'tiny', queue: new TaskQueue() }) as Promise<ChatModel & LlamaChatModel>;
const text = (result: ChatResult) => result.choices.map((c) => c.text);

describe('the descriptor', () => {
  it('names a GGUF by its folder (its last part in public) and file; a split one by its first part', () => {
    const candidate = { engine: 'llama.cpp', model: '/srv/models/qwen', file: 'qwen-q8_0.gguf' } as const;
    expect(LLAMA_CPP_ENGINE.key(candidate)).toBe('/srv/models/qwen/qwen-q8_0.gguf');
    expect(LLAMA_CPP_ENGINE.publicName(candidate)).toBe('qwen/qwen-q8_0.gguf');
    expect(LLAMA_CPP_ENGINE.locations(candidate)).toEqual(['/srv/models/qwen']);
    const hub = { engine: 'llama.cpp', model: 'Qwen/Qwen3-0.6B-GGUF', file: 'Qwen3-0.6B-Q8_0.gguf' } as const;
    expect([LLAMA_CPP_ENGINE.downloads(hub), LLAMA_CPP_ENGINE.usesHub(hub), LLAMA_CPP_ENGINE.locations(hub)]).toEqual([
      true,
      true,
      [],
    ]);
    expect(ggufParts('big-00001-of-00003.gguf')).toEqual([
      'big-00001-of-00003.gguf',
      'big-00002-of-00003.gguf',
      'big-00003-of-00003.gguf',
    ]);
    expect(ggufParts('small.gguf')).toEqual(['small.gguf']);
  });

  it('reads a GGUF vocabulary as the grammar engine needs it: byte-level, SentencePiece, control and added tokens', () => {
    const gpt2 = ggufVocabulary({ model: 'gpt2', tokens: ['Ġhi', '<|im_end|>', '<tool_call>'], token_type: [1, 3, 4] });
    expect(gpt2.type).toBe('byte_level');
    expect([...gpt2.special]).toEqual([1]);
    expect(gpt2.bytes.map((b) => new TextDecoder().decode(b))).toEqual([' hi', '<|im_end|>', '<tool_call>']);
    const spm = ggufVocabulary({ model: 'llama', tokens: ['<s>', '▁Once', '<0x0A>'], token_type: [3, 1, 6] });
    expect([spm.type, spm.prependSpace]).toEqual(['byte_fallback', true]);
    expect(spm.bytes.map((b) => [...b])).toEqual([[60, 115, 62], [32, 79, 110, 99, 101], [10]]);
  });
});

describe('withEngines', () => {
  it("keeps only the named engines' candidates, and only the IDs that keep any", () => {
    const profile = withEngines(bundledProfile(BUNDLED_MODELS), ['llama.cpp']);
    expect(Object.keys(profile)).toEqual(['crimson-falcon-4', 'indigo-owl-4', 'amber-phoenix-4', 'jade-mole-4']);
    for (const entry of Object.values(profile)) expect(entry.candidates.map((c) => c.engine)).toEqual(['llama.cpp']);
    expect(bundledProfile(BUNDLED_MODELS, { engines: ['llama.cpp'] })).toEqual(profile);
  });

  it('refuses an engine it does not know, naming the ones it does', () => {
    expect(() => withEngines(testProfile(), ['llama-cpp' as never])).toThrow(
      /Unknown engine llama-cpp: the engines are transformers, web-llm, llama\.cpp, remote/,
    );
  });
});

describe('a model of one sequence', () => {
  let model: ChatModel & LlamaChatModel;
  beforeAll(async () => {
    model = await load({ ...tinyChat, sequences: 1 });
  });
  afterAll(() => model.dispose());

  it("runs a request's choices in turns, each as a batched run's, counting the prompt and its cache once", async () => {
    // A prompt long enough for a sequence to reuse (16 tokens or more).
    const messages = [
      { role: 'system' as const, content: 'You answer briefly, kindly and plainly, in one short sentence. '.repeat(3) },
      ...refs[0]!.messages,
    ];
    const alone = await model.generate(chatRequest({ messages, cacheScope: 'other' }));
    const result = await model.generate(chatRequest({ messages, n: 3, cacheScope: 'turns' }));
    expect(text(result)).toEqual([...text(alone), ...text(alone), ...text(alone)]);
    // The later turns start from the prompt the first one left in the sequence: this request's own, not a cache hit.
    expect(alone.usage.promptTokens).toBeGreaterThan(16);
    expect(result.usage.cachedPromptTokens).toBeUndefined();
    expect(result.usage.promptTokens).toBe(alone.usage.promptTokens);
    expect(result.usage.completionTokens).toBe(3 * alone.usage.completionTokens);
  });
});

describe('the sequences', () => {
  let model: ChatModel & LlamaChatModel;
  beforeAll(async () => {
    model = await load({ ...tinyChat, sequences: 4 });
  });
  afterAll(() => model.dispose());

  it('decodes concurrent requests together, each answering as it does alone', async () => {
    const alone = [];
    for (const ref of refs.slice(0, 4)) alone.push(text(await model.generate(chatRequest({ messages: ref.messages }))));
    const before = { ...model.stats };
    const together = await Promise.all(
      refs.slice(0, 4).map(async (ref) => text(await model.generate(chatRequest({ messages: ref.messages })))),
    );
    expect(together).toEqual(alone);
    expect(together.map((t) => t[0])).toEqual(refs.slice(0, 4).map((r) => r.greedy_text));
    // Fewer forward passes than row-steps: the rows shared passes.
    const passes = model.stats.forwardPasses - before.forwardPasses;
    expect(passes).toBeLessThan(model.stats.rowSteps - before.rowSteps);
  });

  it("continues the next turn from the sequence that holds the last one, and never from another scope's", async () => {
    const ref = refs[0]!;
    const first = await model.generate(chatRequest({ messages: ref.messages, cacheScope: 'a' }));
    const next = [...ref.messages, { role: 'assistant' as const, content: first.choices[0]!.text }];
    next.push({ role: 'user', content: 'Count to 10.' });
    const second = await model.generate(chatRequest({ messages: next, cacheScope: 'a' }));
    expect(second.usage.cachedPromptTokens).toBeGreaterThanOrEqual(first.usage.promptTokens);
    const other = await model.generate(chatRequest({ messages: next, cacheScope: 'b' }));
    expect(other.usage.cachedPromptTokens ?? 0).toBe(0);
    expect(text(other)).toEqual(text(second));
  });

  it("samples in llama.cpp's own sampler: reproducible per seed, fresh at every step", async () => {
    const story = refs.find((r) => r.messages.at(-1)!.content === 'Tell me a story.')!;
    const seeds = [1, 2, 3, 4];
    // Each run on a model just loaded, so that both start from the same cache: a sequence's KV cells are placed by
    // what it held before, and a prefix reused from other cells (or another batch beside it) changes float rounding,
    // which at temperature 1.5 can move a draw (docs/api.md, `seed`). The same seeds, requests and state repeat.
    const sampleAll = async (extra = {}) => {
      const fresh = await load({ ...tinyChat, sequences: 4 });
      try {
        const request = (seed: number) =>
          chatRequest({ messages: story.messages, temperature: 1.5, seed, maxTokens: 40, ...extra });
        return await Promise.all(seeds.map(async (seed) => text(await fresh.generate(request(seed)))[0]!));
      } finally {
        await fresh.dispose();
      }
    };
    const first = await sampleAll();
    expect(await sampleAll()).toEqual(first);
    expect(new Set(first).size).toBeGreaterThan(1);
    // A draw seeded alike at every step would repeat itself; each step is seeded by its position.
    for (const reply of first) expect(new Set(reply.split(/\s+/)).size).toBeGreaterThan(3);
    // Through the distribution (alternatives in logprobs ask for it), the same seeds sample too, reproducibly.
    const reported = await sampleAll({ logprobs: 1 });
    expect(await sampleAll({ logprobs: 1 })).toEqual(reported);
  });

  it('speculates where llama.cpp draws: a right prediction in fewer passes; sampled output the same draw for draw', async () => {
    const story = refs.find((r) => r.messages.at(-1)!.content === 'Tell me a story.')!;
    const before = model.stats.forwardPasses;
    const predicted = await model.generate(chatRequest({ messages: story.messages, prediction: story.greedy_text }));
    expect(text(predicted)).toEqual([story.greedy_text]);
    expect(predicted.usage.acceptedPredictionTokens).toBeGreaterThan(story.greedy_ids.length / 2);
    expect(model.stats.forwardPasses - before).toBeLessThan(story.greedy_ids.length / 2);
    // Each position is drawn with its own seed, speculated or not: a prediction changes nothing of a sampled reply.
    const sample = (prediction?: string) =>
      model.generate(chatRequest({ messages: story.messages, temperature: 1, seed: 7, maxTokens: 40, prediction }));
    const plain = await sample();
    const guided = await sample(text(plain)[0]!);
    expect(text(guided)).toEqual(text(plain));
    expect(guided.usage.acceptedPredictionTokens).toBeGreaterThan(10);
    // A request that needs the distribution (alternatives in logprobs) does not speculate on llama.cpp: one per position costs more.
    const reported = await model.generate(
      chatRequest({ messages: story.messages, logprobs: 1, prediction: story.greedy_text }),
    );
    expect(reported.usage.acceptedPredictionTokens).toBeUndefined();
  });

  it('speculates with a draft model (Node): the same greedy reply in fewer passes, and refuses another tokenizer', async () => {
    const draft = fileURLToPath(new URL('./fixtures/tiny-chat-draft', import.meta.url));
    const drafted = await load({ ...tinyChat, draft: { model: draft, file: 'gguf/tiny-chat-draft-f32.gguf' } });
    try {
      for (const ref of refs) {
        const request = chatRequest({ messages: ref.messages, maxTokens: ref.greedy_ids.length });
        const before = drafted.stats.forwardPasses;
        const result = await drafted.generate(request);
        expect(text(result)).toEqual([ref.greedy_text]);
        if (ref.greedy_ids.length > 8) {
          expect(result.usage.acceptedPredictionTokens).toBeGreaterThan(0);
          expect(drafted.stats.forwardPasses - before).toBeLessThan(ref.greedy_ids.length);
        }
      }
    } finally {
      await drafted.dispose();
    }
    const think = { model: `${BUNDLED_MODELS}/tiny-think`, file: 'gguf/tiny-think-f32.gguf' };
    await expect(load({ ...tinyChat, draft: think })).rejects.toThrow(/another tokenizer/);
  });

  it("speculates with tiny-chat as the draft of a costlier target (Node): the target's own greedy replies in fewer passes", async () => {
    // test/fixtures/tiny-chat-target: tiny-chat grown to 16 layers and distilled from it (target_fixture.py).
    const target = {
      engine: 'llama.cpp',
      model: fileURLToPath(new URL('./fixtures/tiny-chat-target', import.meta.url)),
      file: 'gguf/tiny-chat-target-f32.gguf',
    } as const;
    const [off, drafted] = [
      await load(target),
      await load({ ...target, draft: { model: tinyChat.model, file: tinyChat.file } }),
    ];
    try {
      const passes = { off: 0, on: 0 };
      for (const ref of refs) {
        const request = chatRequest({ messages: ref.messages, maxTokens: 64 });
        const before = [off.stats.forwardPasses, drafted.stats.forwardPasses];
        const [plain, speculated] = [await off.generate(request), await drafted.generate(request)];
        passes.off += off.stats.forwardPasses - before[0]!;
        passes.on += drafted.stats.forwardPasses - before[1]!;
        expect(text(speculated)).toEqual(text(plain));
      }
      expect(passes.on).toBeLessThan(passes.off / 2);
    } finally {
      await Promise.all([off.dispose(), drafted.dispose()]);
    }
  });

  it('gives each sequence of a batch its own distribution, batches of mixed lengths in any order included', async () => {
    // llama.cpp reorders a batch's outputs on their first read, and node-llama-cpp reads them from a thread per
    // sequence at once: unguarded, about one check in a hundred here got another sequence's distribution.
    const llama = await getLlama({ gpu: false, build: 'never' });
    const gguf = await llama.loadModel({ modelPath: `${BUNDLED_MODELS}/tiny-chat/gguf/tiny-chat-f32.gguf` });
    const batched = await createSequencesContext(gguf, { sequences: 4, contextSize: 256, threads: 1 });
    const alone = await createSequencesContext(gguf, { sequences: 1, contextSize: 256, threads: 1 });
    try {
      const sequences = Array.from({ length: 4 }, () => batched.getSequence());
      const reference = alone.getSequence();
      const texts = [
        'Tell me a story about a fox who lived in the woods and found a lantern.',
        'Count to ten please: one two three four five six seven eight nine ten.',
        'What is the weather like in Paris today? It is sunny and warm there.',
        'Hello there my friend, how are you doing on this fine spring morning?',
      ];
      const streams = texts.map((t) => [...gguf.tokenize(t)]);
      const fed = [0, 0, 0, 0];
      const options = { temperature: 1, topK: 0, topP: 1, minP: 0 };
      // Each token asks for the distribution after it.
      const evaluate = async (sequence: typeof reference, tokens: number[]) =>
        (
          await sequence.controlledEvaluate(
            tokens.map((t) => [t as Token, { generateNext: { probabilities: true, options } }] as const),
          )
        ).map((item) => item!.next.probabilities!);
      const random = seededRandom(7);
      let checks = 0;
      for (let round = 0; round < 200; round++) {
        const rows = [0, 1, 2, 3].filter(() => random() < 0.8).sort(() => random() - 0.5);
        const counts = rows.map(() => 1 + Math.floor(random() * 4));
        const got = await Promise.all(
          rows.map(async (i, k) => {
            if (fed[i]! + counts[k]! > streams[i]!.length) {
              await sequences[i]!.clearHistory();
              fed[i] = 0;
            }
            const tokens = streams[i]!.slice(fed[i], (fed[i] = fed[i]! + counts[k]!));
            return evaluate(sequences[i]!, tokens);
          }),
        );
        for (const [k, i] of rows.entries()) {
          await reference.clearHistory();
          const want = (await evaluate(reference, streams[i]!.slice(0, fed[i]))).slice(-counts[k]!);
          for (const [at, distribution] of want.entries()) {
            const [top, p] = [...distribution].sort((a, b) => b[1] - a[1])[0]!;
            checks++;
            expect({ round, row: i, at, p: got[k]![at]!.get(top) ?? 0 }).toEqual({
              round,
              row: i,
              at,
              p: expect.closeTo(p, 2),
            });
          }
        }
      }
      expect(checks).toBeGreaterThan(1000);
    } finally {
      await batched.dispose();
      await alone.dispose();
      await gguf.dispose();
    }
  });

  it('refuses more choices than it has sequences, naming n, before any work', async () => {
    const refused = model.generate(chatRequest({ n: 5 }));
    await expect(refused).rejects.toBeInstanceOf(EngineError);
    await expect(refused).rejects.toMatchObject({ kind: 'invalid_request', param: 'n' });
  });

  it('stops within a token of an abort, and answers the next request', async () => {
    const controller = new AbortController();
    let tokens = 0;
    const run = model.generate(chatRequest({ messages: refs[0]!.messages, maxTokens: 200 }), {
      signal: controller.signal,
      onEvent: (event) => {
        if (event.type === 'delta' && ++tokens === 3) controller.abort();
      },
    });
    await expect(run).rejects.toMatchObject({ kind: 'aborted' });
    expect(tokens).toBe(3);
    expect(text(await model.generate(chatRequest({ messages: refs[0]!.messages })))).toEqual([refs[0]!.greedy_text]);
  });

  it('stops a long prompt within a piece of an abort, its sequence holding what it fed, and answers the next', async () => {
    // About 900 tokens: four pieces of a prefill, most of the 1,024-token window.
    const prompt = 'Once upon a time, there was a little girl who loved to play outside in the park. '.repeat(18);
    const request = (cacheScope: string) => chatRequest({ messages: [], prompt, maxTokens: 8, cacheScope });
    const reference = await model.generate(request('whole'));
    const pieces = Math.ceil(reference.usage.promptTokens / 256);
    expect(pieces).toBeGreaterThanOrEqual(4);

    // Aborted as its first piece starts: llama.cpp's pass runs on a thread of its own, so the loop sees its start.
    const controller = new AbortController();
    const before = model.stats.forwardPasses;
    const watch = () => {
      if (model.stats.forwardPasses > before) controller.abort();
      else setImmediate(watch);
    };
    watch();
    const aborted = model.generate(request('aborted'), { signal: controller.signal });
    await expect(aborted).rejects.toMatchObject({ kind: 'aborted' });
    const fed = model.stats.forwardPasses - before;
    expect(fed).toBeLessThan(pieces);

    // The next request with that prompt starts from exactly the pieces fed (no more: none of them half-evaluated), and
    // answers as the prompt evaluated whole does.
    const next = await model.generate(request('aborted'));
    expect(next.usage.cachedPromptTokens).toBe(fed * 256);
    expect(text(next)).toEqual(text(reference));
  });
});

describe.skipIf(!HAS_STORIES_260K)('stories260K as GGUF (../shared/models)', () => {
  it('continues "Once upon a time" as its README documents, with the BOS its tokenizer adds', async () => {
    const folder = mkdtempSync(`${os.tmpdir()}/lantern-gguf-`);
    const converted = spawnSync('/usr/bin/python3', [
      'scripts/fixtures/gguf_convert.py',
      STORIES_260K,
      `${folder}/stories260K-f32.gguf`,
    ]);
    expect(converted.status, converted.stderr?.toString()).toBe(0);
    const stories = await load({ engine: 'llama.cpp', model: folder, file: 'stories260K-f32.gguf' });
    const result = await stories.generate(chatRequest({ messages: [], prompt: 'Once upon a time', maxTokens: 30 }));
    expect(result.choices[0]!.text).toMatch(
      /^, there was a little girl named Lily\. She loved to play outside in the park\./,
    );
    expect(result.usage.promptTokens).toBe(5); // <s> and four tokens
    await stories.dispose();
  });
});

describe('what browsers read of a GGUF without llama.cpp (wllama decodes and reads metadata asynchronously only)', () => {
  const texts = ['Hello! How can I help you today?', ' héllo  wörld 👋\n{"a": [1, 2]}', '<|im_end|>x'];

  it.each([
    ['tiny-chat (byte-level BPE)', `${BUNDLED_MODELS}/tiny-chat/gguf/tiny-chat-f32.gguf`],
    ...(HAS_STORIES_260K ? [['stories260K (SentencePiece)', 'stories']] : []),
  ])('%s: the metadata as node-llama-cpp reads it, the text as llama.cpp decodes it', async (_name, given) => {
    let path = given!;
    if (path === 'stories') {
      path = `${mkdtempSync(`${os.tmpdir()}/lantern-gguf-`)}/stories260K-f32.gguf`;
      spawnSync('/usr/bin/python3', ['scripts/fixtures/gguf_convert.py', STORIES_260K, path]);
    }
    const llama = await getLlama({ gpu: false, build: 'never' });
    const model = await llama.loadModel({ modelPath: path });
    const metadata = await readGgufMetadata(new Blob([readFileSync(path)]), 'http://models.test/model.gguf');
    const expected = model.fileInfo.metadata as unknown as typeof metadata;
    expect(metadata.general.architecture).toBe(expected.general.architecture);
    expect(metadata.tokenizer).toEqual(expected.tokenizer);
    expect(metadata[metadata.general.architecture]).toEqual(expected[expected.general.architecture]);

    const decoder = vocabularyDecoder(ggufVocabulary(metadata.tokenizer.ggml));
    for (const text of texts) {
      const ids = [...model.tokenize(text, true)];
      expect(decoder.decode(ids)).toBe(model.detokenize(ids as Token[], false));
      for (const id of ids) expect(decoder.tokenString(id)).toBe(model.detokenize([id], true));
    }
    await model.dispose();
  });
});
