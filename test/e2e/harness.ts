/**
 * The end-to-end harness page: a real app page that starts Lantern and bundles the official openai SDK. Playwright
 * drives it through `window.harness`; the SDK calls run in the page, through the real service worker and engine worker.
 */
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { HumanMessage } from '@langchain/core/messages';
import { tool as langchainTool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { generateObject, generateText, stepCountIs, streamObject, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { zodFunction, zodResponseFormat, zodTextFormat } from 'openai/helpers/zod';
import * as z from 'zod';
import {
  bundledProfile,
  DEFAULT_PROFILE,
  startLocalAPI,
  type DevicePreference,
  type LoadProgress,
  type ModelProfile,
  type RunReport,
} from '../../src/client/index.ts';

const params = new URLSearchParams(location.search);
// ?profile=default: the real models (they need the network); otherwise the bundled ones.
let profile: ModelProfile = params.get('profile') === 'default' ? DEFAULT_PROFILE : bundledProfile('/models');
// ?broken=ID points that ID at a model whose weights are corrupt; ?late=ID at one the test server may withhold
// (see vite.config.ts).
for (const [param, folder] of [
  ['broken', '/e2e/corrupt-chat'],
  ['late', '/e2e/late-chat'],
] as const) {
  const id = params.get(param);
  if (id) {
    const candidates = [{ engine: 'transformers', model: folder, dtype: 'fp32', device: 'cpu' }] as const;
    profile = { ...profile, [id]: { task: 'chat', created: 0, candidates } };
  }
}
// ?remote=ID&upstream=URL&upstreamKey=KEY: that ID's chain is a model no browser here can run (web-llm in half
// precision: no shader-f16 on SwiftShader, no WebGPU on the wasm path), then that OpenAI-compatible server.
const remote = params.get('remote');
if (remote) {
  const candidates = [
    { engine: 'web-llm', model: 'SmolLM2-360M-Instruct-q4f16_1-MLC' },
    {
      engine: 'remote',
      baseURL: params.get('upstream')!,
      model: params.get('upstreamModel') ?? 'crimson-falcon-4',
      apiKey: params.get('upstreamKey') ?? '',
    },
  ] as const;
  profile = { ...profile, [remote]: { task: 'chat', created: 0, candidates } };
}
// ?fallback=ID,ID: each of those IDs tries, before each of its bundled candidates, a corrupt copy of it on the same
// device, which fails inside onnxruntime's session creation: its chain must really fall back.
for (const id of params.get('fallback')?.split(',') ?? []) {
  const entry = profile[id]!;
  const corrupt = entry.task === 'chat' ? '/e2e/corrupt-chat' : '/e2e/corrupt-embed';
  const candidates = entry.candidates.flatMap((candidate) => [{ ...candidate, model: corrupt }, candidate]);
  profile = { ...profile, [id]: { ...entry, candidates } };
}
// ?scratch=ID: that ID runs the tiny chat model's sound copy (another folder, so a model loaded apart) with prefix reuse
// off, to compare answers with and without it.
const scratch = params.get('scratch');
if (scratch) {
  const candidates = (['webgpu', 'cpu'] as const).map((device) => ({
    engine: 'transformers' as const,
    model: '/e2e/late-chat',
    dtype: 'fp32' as const,
    device,
    prefixCacheBytes: 0,
  }));
  profile = { ...profile, [scratch]: { task: 'chat', created: 0, candidates } };
}
const lantern = await startLocalAPI({
  device: (params.get('device') as DevicePreference | null) ?? 'auto',
  profile,
  // ?persist=1: ask for persistent storage, as a profile that downloads models does by default.
  ...(params.has('persist') && { persistStorage: true }),
});

const runs: RunReport[] = [];
lantern.addEventListener('run', (event) => runs.push(event.detail));
const progress: LoadProgress[] = [];
lantern.addEventListener('progress', (event) => progress.push(event.detail));
// Recorded rather than awaited by the tests: a WebDriver tab runs one evaluation at a time.
const restarts: string[] = [];
lantern.addEventListener('restart', (event) => restarts.push(event.detail.reason));

/** The SDK error class of `error` and its code ("AuthenticationError invalid_api_key"); class names are minified. */
function describeError(error: unknown): string {
  const classes = [
    'AuthenticationError',
    'NotFoundError',
    'BadRequestError',
    'RateLimitError',
    'InternalServerError',
  ] as const;
  const name = classes.find((c) => error instanceof OpenAI[c]) ?? `unexpected ${String(error)}`;
  const code = (error as { code?: string | null }).code;
  return code ? `${name} ${code}` : name;
}

const harness = {
  lantern,
  OpenAI,
  /** Structured-output clients, unmodified, for test/e2e/structured-output.spec.ts. */
  structured: { z, zodResponseFormat, generateObject, streamObject, createOpenAICompatible, ChatOpenAI },
  /** Tool-calling clients, unmodified, for test/e2e/tool-calls.spec.ts. */
  tools: { z, zodFunction, generateText, streamText, tool, stepCountIs, ChatOpenAI, langchainTool, HumanMessage },
  /** The Responses API's clients, for test/e2e/responses.spec.ts: the AI SDK's default OpenAI provider and its calls. */
  responses: { zodTextFormat, createOpenAI, generateText, streamText },
  runs,
  progress,
  restarts,
  describeError,
  /**
   * An SDK client for `key`; retries off unless asked, so tests see each answer. `lanternFetch` routes it through
   * `lantern.fetch`, so aborts of non-streamed requests reach the engine too.
   */
  client: (key: string, { lanternFetch = false, ...options }: { maxRetries?: number; lanternFetch?: boolean } = {}) =>
    new OpenAI({
      baseURL: lantern.baseURL,
      apiKey: key,
      dangerouslyAllowBrowser: true,
      maxRetries: 0,
      ...(lanternFetch && { fetch: lantern.fetch }),
      ...options,
    }),
  /** All the memory of this page and its workers (needs cross-origin isolation), smallest of three readings. */
  memory: async () => {
    const measure = (performance as Performance & { measureUserAgentSpecificMemory?: () => Promise<{ bytes: number }> })
      .measureUserAgentSpecificMemory;
    if (!crossOriginIsolated || !measure) return null;
    const readings = [];
    for (let i = 0; i < 3; i++) readings.push((await measure.call(performance)).bytes);
    return Math.min(...readings);
  },
};
Object.assign(window, { harness });
export type Harness = typeof harness;
