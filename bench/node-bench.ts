import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createEngine, createHandler, KeyRing } from '../src/index.ts';
import { HAS_STORIES_260K, openaiClient, STORIES_260K } from '../test/support/lantern.ts';
import { overrideTask } from '../test/support/task-override.ts';
import { benchProfile, EMBED } from './models.ts';
import { endlessEngineRequest, endlessStream } from './requests.ts';
import type { ChatSamples, ConcurrencySamples, EmbeddingSamples } from './measures.ts';
import { sdkBatchingRunner } from './batching.ts';

/**
 * The handler in Node: the openai SDK calling it through its `fetch` option against the same engine called directly,
 * in one process. What this measures is the cost of the handler, SSE and the SDK; there is no worker in Node.
 */
const MODELS = fileURLToPath(new URL('../public/models', import.meta.url));
const now = () => performance.timeOrigin + performance.now();

/** The bundled models, and stories260K when this machine has it. */
const PROFILE = benchProfile(MODELS, HAS_STORIES_260K ? STORIES_260K : undefined);

export async function nodeBench(profile = PROFILE) {
  const engine = createEngine({ profile });
  // The engine under the handler, with each token's generation time noted on the way out.
  let generated: number[] = [];
  const traced = overrideTask(engine, 'chat', (id, request, options = {}) =>
    engine.chat(id, request, {
      ...options,
      onEvent: (event) => {
        if (event.type === 'delta') generated.push(now());
        options.onEvent?.(event);
      },
    }),
  );
  const keys = new KeyRing();
  const handler = createHandler({
    engine: traced,
    keys,
    rateLimits: { requestsPerMinute: 1e6, concurrentGenerations: 64, maxGenerations: 64 },
  });
  const client = openaiClient(handler, (await keys.issue('bench')).key, { maxRetries: 0 });
  const directChat = async (model: string, tokens: number) => {
    const tokenTimes: number[] = [];
    const started = now();
    await engine.chat(model, endlessEngineRequest(tokens), {
      onEvent: (e) => e.type === 'delta' && tokenTimes.push(now()),
    });
    return { started, tokenTimes };
  };
  const pathChat = async (model: string, tokens: number) => {
    generated = [];
    const started = now();
    const received: number[] = [];
    for await (const chunk of await client.chat.completions.create(endlessStream(model, tokens))) {
      if (chunk.choices[0]?.delta.content) received.push(now());
    }
    return { started, received, generated };
  };
  const chat = async (model: string, tokens: number, count: number): Promise<ChatSamples> => {
    await directChat(model, 8);
    await pathChat(model, 8);
    const samples: ChatSamples = { direct: [], path: [] };
    for (let i = 0; i < count; i++) {
      samples.direct.push(await directChat(model, tokens));
      samples.path.push(await pathChat(model, tokens));
    }
    return samples;
  };

  const embeddings = async (size: number, count: number): Promise<EmbeddingSamples> => {
    const input = Array.from({ length: size }, (_, i) => `Sentence ${i} is about cats, dogs and lanterns in the rain.`);
    const timed = async (run: () => Promise<unknown>) => {
      const started = performance.now();
      await run();
      return performance.now() - started;
    };
    const direct = () => engine.embed(EMBED, { input });
    const viaPath = () => client.embeddings.create({ model: EMBED, input });
    const oneByOne = async () => {
      for (const text of input) await client.embeddings.create({ model: EMBED, input: text });
    };
    await direct();
    await viaPath();
    const samples: EmbeddingSamples = { direct: [], path: [], oneByOne: [] };
    for (let i = 0; i < count; i++) {
      samples.direct.push(await timed(direct));
      samples.path.push(await timed(viaPath));
      if (size > 1) samples.oneByOne.push(await timed(oneByOne));
    }
    return samples;
  };

  const concurrent = async (model: string, streams: number, tokens: number): Promise<ConcurrencySamples> => {
    const started = now();
    const received = await Promise.all(
      Array.from({ length: streams }, async () => {
        const times: number[] = [];
        for await (const chunk of await client.chat.completions.create(endlessStream(model, tokens))) {
          if (chunk.choices[0]?.delta.content) times.push(now());
        }
        return times;
      }),
    );
    return { started, received };
  };

  return { chat, embeddings, concurrent, ...sdkBatchingRunner(() => client, now) };
}
