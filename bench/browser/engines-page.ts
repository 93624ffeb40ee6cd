/**
 * The engines benchmark page (bench/browser-engines.ts drives it): Lantern serving one model on one engine
 * (`?engine=transformers|llama.cpp&model=FOLDER&gguf=FILE`, the CPU, WebAssembly), measured through /v1 with the
 * openai SDK; and, for llama.cpp, wllama called directly in the same page on the same GGUF (`window.engines.wllama`),
 * as an app that uses wllama alone would: the baseline of `/v1 ÷ wllama direct`.
 */
import multiThreadWasm from '@wllama/wllama/esm/multi-thread/wllama.wasm?url';
import singleThreadWasm from '@wllama/wllama/esm/single-thread/wllama.wasm?url';
import { Wllama } from '@wllama/wllama/esm/index.js';
import OpenAI from 'openai';
import { startLocalAPI, type ModelCandidate } from '../../src/client/index.ts';

const params = new URLSearchParams(location.search);
const ID = 'engines-bench';
const gguf = new URL(params.get('gguf')!, location.href);
const candidate: ModelCandidate =
  params.get('engine') === 'llama.cpp'
    ? {
        engine: 'llama.cpp',
        model: gguf.pathname.slice(0, gguf.pathname.lastIndexOf('/')),
        file: gguf.pathname.slice(gguf.pathname.lastIndexOf('/') + 1),
      }
    : { engine: 'transformers', model: params.get('model')!, dtype: 'fp32', device: 'cpu' };
const lantern = await startLocalAPI({
  profile: { [ID]: { task: 'chat', created: 0, candidates: [candidate] } },
  device: 'wasm',
});
/** A key per request in turn: each its own cache scope, and well within each key's rate limit. */
const keys: string[] = [];
for (let i = 0; i < 32; i++) keys.push((await lantern.keys.issue(`engines ${i}`)).key);
let sent = 0;
const client = () =>
  new OpenAI({
    baseURL: lantern.baseURL,
    apiKey: keys[sent++ % keys.length]!,
    dangerouslyAllowBrowser: true,
    maxRetries: 0,
  });

let direct: Wllama | undefined;

const engines = {
  /**
   * One streamed chat completion of `body` (model set here) through /v1: when it was sent, when each chunk with text
   * came (ms, performance.now()), its text, and the usage (tokens; prediction tokens accepted and rejected).
   */
  async chat(body: Record<string, unknown>) {
    const started = performance.now();
    const stream = await client().chat.completions.create({
      ...body,
      model: ID,
      stream: true,
      stream_options: { include_usage: true },
    } as OpenAI.ChatCompletionCreateParamsStreaming);
    const chunks: number[] = [];
    let tokens = 0;
    let text = '';
    let accepted = 0;
    let rejected = 0;
    for await (const chunk of stream) {
      const content = chunk.choices[0]?.delta.content;
      if (content) {
        chunks.push(performance.now());
        text += content;
      }
      if (chunk.usage) {
        tokens = chunk.usage.completion_tokens;
        accepted = chunk.usage.completion_tokens_details?.accepted_prediction_tokens ?? 0;
        rejected = chunk.usage.completion_tokens_details?.rejected_prediction_tokens ?? 0;
      }
    }
    return { started, ended: performance.now(), chunks, tokens, text, accepted, rejected };
  },

  /** Several at once: all of them, as `chat` reports each. */
  async together(bodies: Record<string, unknown>[]) {
    return Promise.all(bodies.map((body) => engines.chat(body)));
  },

  wllama: {
    /** Loads the GGUF into a wllama of the page, with the threads and window Lantern's runtime gives it. */
    async load(nCtx: number) {
      direct = new Wllama(
        { 'single-thread/wllama.wasm': singleThreadWasm, 'multi-thread/wllama.wasm': multiThreadWasm },
        { suppressNativeLog: true, logger: { debug() {}, log() {}, warn() {}, error: console.error } },
      );
      const blob = await (await fetch(gguf)).blob();
      await direct.loadModel([blob], {
        n_ctx: nCtx,
        n_batch: Math.min(512, nCtx),
        n_threads: Math.max(1, Math.floor((navigator.hardwareConcurrency || 1) / 2)),
      });
    },
    /**
     * `tokens` greedy tokens of `prompt` (a chat template written out), each token's time (ms): drawn by wllama's
     * sampler, with `bias` (token → bias) as its logit bias.
     */
    async run(prompt: string, tokens: number, bias: Record<number, number> = {}) {
      const times: number[] = [];
      const logit_bias = Object.entries(bias).map(([token, value]) => ({ token: Number(token), bias: value }));
      await direct!.createCompletion(prompt, {
        nPredict: tokens,
        sampling: { temp: 0, logit_bias },
        onNewToken: () => times.push(performance.now()),
      });
      return times;
    },
    /**
     * `tokens` greedy tokens of `prompt` with each one's probability, each token's time (ms): the most probable token
     * and its probability as wllama gives them (`getLogits(1)`, which sorts the vocabulary), its cheapest way.
     */
    async runWithProbabilities(prompt: string, tokens: number) {
      const times: number[] = [];
      const wllama = direct!;
      await wllama.kvClear();
      let input = await wllama.tokenize(prompt, true);
      if (wllama.mustAddBosToken() && input[0] !== wllama.getBOS()) input.unshift(wllama.getBOS());
      for (let i = 0; i < tokens; i++) {
        await wllama.decode(input, {});
        const [top] = await wllama.getLogits(1);
        if (!(top!.p > 0)) throw new Error('wllama gave no probability');
        times.push(performance.now());
        input = [top!.token];
      }
      return times;
    },
  },
};

declare global {
  interface Window {
    engines: typeof engines;
  }
}
window.engines = engines;
