/**
 * wllama 3's runtime alone in a page (no service worker, no engine worker): the bundled tiny-chat GGUF loaded with
 * `src/engines/llama-cpp/wllama3-runtime.ts`, driven by wllama3.spec.ts through `window.wllama3`: the runtime's own
 * behaviour, below the generation core (wllama3-route.spec.ts runs it through /v1).
 */
import { ChatTemplate } from '../../src/engines/llama-cpp/gguf-chat-template.ts';
import { browserFeatures, llamaDeviceOf, type LlamaDevice } from '../../src/engines/llama-cpp/wllama-device.ts';
import { loadWllama3, type Wllama3Model } from '../../src/engines/llama-cpp/wllama3-runtime.ts';
import type { Wllama3Piece, Wllama3Plan } from '../../src/engines/llama-cpp/wllama3-request.ts';

const GREEDY: Wllama3Plan = {
  temperature: 0,
  topP: 1,
  seed: 1,
  maxTokens: 48,
  presencePenalty: 0,
  frequencyPenalty: 0,
};

let model: Promise<Wllama3Model> | undefined;

/** The model on `device` (forced: the runtime runs where the caller says). */
function loaded(device: LlamaDevice['device']): Promise<Wllama3Model> {
  model ??= loadWllama3(
    {
      engine: 'llama.cpp',
      model: '/models/tiny-chat',
      file: 'gguf/tiny-chat-f32.gguf',
      contextWindow: 512,
      sequences: 2,
    },
    { runtime: 'wllama3', device },
  );
  return model;
}

/** The chat prompt as the GGUF's template renders it for one user message. */
async function chat(content: string): Promise<string> {
  const { metadata } = await model!;
  return new ChatTemplate(String(metadata.tokenizer.chat_template), {}).render(
    { messages: [{ role: 'user', content }] },
    false,
  );
}

/** Runs a row to its end: its pieces' texts and its end. */
async function run(prompt: string, plan: Partial<Wllama3Plan>, scope?: string, signal?: AbortSignal) {
  const texts: string[] = [];
  const counts: Wllama3Piece['counts'][] = [];
  let end: Wllama3Piece['end'];
  for await (const piece of (await model!).generate(prompt, { ...GREEDY, ...plan }, scope, signal)) {
    texts.push(piece.text);
    counts.push(piece.counts);
    end = piece.end;
  }
  return { texts, text: texts.join(''), counts, end };
}

async function failure(work: Promise<unknown>) {
  try {
    await work;
    return undefined;
  } catch (error) {
    const { name, message, kind, param } = error as Error & { kind?: string; param?: string };
    return { name, message, kind, param };
  }
}

const api = {
  async device() {
    const features = await browserFeatures();
    return {
      chosen: llamaDeviceOf(features),
      adapterFeatures: features.adapterFeatures && [...features.adapterFeatures],
    };
  },
  async load(device: LlamaDevice['device']) {
    const m = await loaded(device);
    return { contextLength: m.contextLength, rows: m.rows, device: m.device, runsOn: m.runsOn };
  },
  run: async (content: string, plan: Partial<Wllama3Plan> = {}, scope?: string) =>
    run(await chat(content), plan, scope),
  /** Two rows at once, as a request's two choices run. */
  both: async (content: string) => Promise.all([run(await chat(content), {}), run(await chat(content), {})]),
  /** A row aborted after its first piece, then a plain one (its sequence must be free again). */
  async aborted(content: string) {
    const prompt = await chat(content);
    const controller = new AbortController();
    const pieces: string[] = [];
    const error = await failure(
      (async () => {
        for await (const piece of (await model!).generate(prompt, GREEDY, undefined, controller.signal)) {
          pieces.push(piece.text);
          controller.abort();
        }
      })(),
    );
    return { pieces, error, after: await run(prompt, {}) };
  },
  tooLong: async () => failure(run('hello there '.repeat(400), {})),
  refused: async () => failure(run('Hi', { presencePenalty: 1 })),
};

declare global {
  interface Window {
    wllama3: typeof api;
  }
}
window.wllama3 = api;
