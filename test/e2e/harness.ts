/**
 * The end-to-end harness page: a real app page that starts Lantern and bundles the official openai SDK. Playwright
 * drives it through `window.harness`; the SDK calls run in the page, through the real service worker and engine worker.
 */
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { HumanMessage } from '@langchain/core/messages';
import { tool as langchainTool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { Agent, Runner, StreamedRunResult, tool as agentTool, type RunItem } from '@openai/agents-core';
import {
  fileSearchTool,
  OpenAIConversationsSession,
  OpenAIProvider,
  OpenAIResponsesCompactionSession,
} from '@openai/agents-openai';
import {
  OpenAIRealtimeWebRTC,
  OpenAIRealtimeWebSocket,
  RealtimeAgent,
  RealtimeSession,
  tool as realtimeTool,
} from '@openai/agents-realtime';
import { generateObject, generateText, stepCountIs, streamObject, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { zodFunction, zodResponseFormat, zodTextFormat } from 'openai/helpers/zod';
import { ResponsesWSBase } from 'openai/resources/responses/ws-base';
import * as z from 'zod';
import {
  bundledProfile,
  DEFAULT_PROFILE,
  LocalRealtimeSocket,
  LocalResponsesSocket,
  startLocalAPI,
  type DevicePreference,
  type LoadProgress,
  type ModelCandidate,
  type ModelProfile,
  type RunReport,
  type VersionMismatch,
} from '../../src/client/index.ts';
import type { EngineName } from '../../src/engines/engine-registry.ts';
import { soakPlan } from '../support/soak.ts';
import { agentRunItems } from '../support/agent-run-items.ts';

const params = new URLSearchParams(location.search);
// ?profile=default: the real models (they need the network); otherwise the bundled ones, on the engines that
// ?engines=NAME,NAME names (all of them by default: the llama.cpp project runs the shared tests on llama.cpp alone).
const engines = params.get('engines')?.split(',') as EngineName[] | undefined;
let profile: ModelProfile =
  params.get('profile') === 'default' ? DEFAULT_PROFILE : bundledProfile('/models', engines ? { engines } : {});
// ?threads=N: llama.cpp's candidates compute with N threads (wllama's multi-threaded build, in a cross-origin isolated
// page).
const threads = Number(params.get('threads') ?? 0);
if (threads) {
  profile = Object.fromEntries(
    Object.entries(profile).map(([id, entry]) => [
      id,
      { ...entry, candidates: entry.candidates.map((c) => (c.engine === 'llama.cpp' ? { ...c, threads } : c)) },
    ]),
  );
}
// ?llama=wllama3 (or wllama2): llama.cpp's chat candidates run on that build of llama.cpp, where they would choose it
// by the device otherwise (LlamaCppCandidate.runtime).
const llamaRuntime = params.get('llama') as 'wllama2' | 'wllama3' | null;
if (llamaRuntime) {
  profile = Object.fromEntries(
    Object.entries(profile).map(([id, entry]) => [
      id,
      {
        ...entry,
        candidates: entry.candidates.map((c) => (c.engine === 'llama.cpp' ? { ...c, runtime: llamaRuntime } : c)),
      },
    ]),
  );
}
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
// ?hybrid=ID: that ID runs the bundled hybrid fixture (tiny-hybrid: LFM2's short convolutions beside attention, a state
// that cannot be cut back), on the engines ?engines= names: llama.cpp's GGUF copy (wllama), or transformers.js' ONNX.
const hybrid = params.get('hybrid');
if (hybrid) {
  const candidates = [
    { engine: 'llama.cpp', model: '/models/tiny-hybrid', file: 'gguf/tiny-hybrid-f32.gguf' },
    {
      engine: 'transformers',
      model: '/models/tiny-hybrid',
      dtype: 'fp32',
      device: 'webgpu',
      evenOnFallbackAdapter: true,
    },
    { engine: 'transformers', model: '/models/tiny-hybrid', dtype: 'fp32', device: 'cpu' },
  ] as const;
  const chosen = candidates.filter((c) => !engines || engines.includes(c.engine));
  profile = { ...profile, [hybrid]: { task: 'chat', created: 0, candidates: [...chosen] } };
  // ?hybridFresh=ID: the same model loaded apart, with transformers.js' prefix cache off (wllama keeps one sequence,
  // which the test empties of what a prompt shares by asking something else first).
  const fresh = params.get('hybridFresh');
  if (fresh) {
    const apart = chosen.map((c) => (c.engine === 'transformers' ? { ...c, prefixCacheBytes: 0 } : { ...c }));
    profile = { ...profile, [fresh]: { task: 'chat', created: 0, candidates: apart } };
  }
}
// ?hub=ORIGIN: models downloaded by Lantern itself from the test hub (test/support/hub-server.ts, another origin), for
// test/e2e/downloads.spec.ts: crimson-falcon-4 runs the hub's `lantern/tiny-chat` (WebGPU even on a fallback adapter,
// then the CPU, as the bundled profile's candidates), jade-mole-4 the hub's tiny-embed named by an absolute URL (a
// folder on another origin: no hub listing, sizes from the server). amber-phoenix-4 and the rest stay bundled.
const hub = params.get('hub');
if (hub) {
  const both = (model: string) =>
    [
      { engine: 'transformers', model, hub, dtype: 'fp32', device: 'webgpu', evenOnFallbackAdapter: true },
      { engine: 'transformers', model, hub, dtype: 'fp32', device: 'cpu' },
    ] as const;
  const cpu = (model: string) => ({ engine: 'transformers', model, hub, dtype: 'fp32', device: 'cpu' }) as const;
  const chain = (id: string, candidates: readonly ModelCandidate[]) => {
    profile = { ...profile, [id]: { ...profile[id]!, candidates: [...candidates] } };
  };
  chain('crimson-falcon-4', both('lantern/tiny-chat'));
  chain('jade-mole-4', both(`${hub}/lantern/tiny-embed/resolve/main`));
  // ?quotaPick=ID: the hub's tiny-chat, then the app's own copy (precached: nothing to download), both on the CPU.
  const quotaPick = params.get('quotaPick');
  const ownChat = { engine: 'transformers', model: '/models/tiny-chat', dtype: 'fp32', device: 'cpu' } as const;
  if (quotaPick) chain(quotaPick, [cpu('lantern/tiny-chat'), ownChat]);
  // ?quotaAll=ID: two hub models, neither of them small enough for a tight quota.
  const quotaAll = params.get('quotaAll');
  if (quotaAll) chain(quotaAll, [cpu('lantern/tiny-chat'), cpu('lantern/tiny-think')]);
  // ?gguf=ID: the hub's tiny-chat as a GGUF on llama.cpp (wllama).
  const gguf = params.get('gguf');
  if (gguf) chain(gguf, [{ engine: 'llama.cpp', model: 'lantern/tiny-chat', hub, file: 'gguf/tiny-chat-f32.gguf' }]);
  // ?webllm=ID&modelLib=URL: web-llm's Qwen3-0.6B (single precision) from the hub, whose synthetic MLC repo stands in
  // for it there, with its model library from URL. Only to download and place: nothing can run those bytes.
  const webllm = params.get('webllm');
  if (webllm) {
    const modelLib = params.get('modelLib') ?? undefined;
    chain(webllm, [{ engine: 'web-llm', model: 'Qwen3-0.6B-q4f32_1-MLC', hub, ...(modelLib && { modelLib }) }]);
  }
}

// ?countPersist=1: every call of navigator.storage.persist() is recorded (with the progress events seen by then)
// before Lantern starts; ?countPersist=stub records it and answers false without asking the browser (Firefox asks its
// user, with a prompt a test cannot answer).
const progress: LoadProgress[] = [];
const persistCalls: LoadProgress['status'][][] = [];
const countPersist = params.get('countPersist');
if (countPersist && navigator.storage?.persist) {
  const persist = navigator.storage.persist.bind(navigator.storage);
  navigator.storage.persist = () => {
    persistCalls.push(progress.map((p) => p.status));
    return countPersist === 'stub' ? Promise.resolve(false) : persist();
  };
}

const lantern = await startLocalAPI({
  device: (params.get('device') as DevicePreference | null) ?? 'auto',
  profile,
  // ?persist=1: ask for persistent storage, as a profile that downloads models does by default.
  ...(params.has('persist') && { persistStorage: true }),
});

const runs: RunReport[] = [];
lantern.addEventListener('run', (event) => runs.push(event.detail));
lantern.addEventListener('progress', (event) => progress.push(event.detail));
// Recorded rather than awaited by the tests: a WebDriver tab runs one evaluation at a time.
const restarts: string[] = [];
lantern.addEventListener('restart', (event) => restarts.push(event.detail.reason));
// An app update: every `update` event, and every `mismatch` (a service worker of another protocol version).
const versions = { updates: 0, mismatches: [] as VersionMismatch[] };
lantern.addEventListener('update', () => (versions.updates += 1));
lantern.addEventListener('mismatch', (event) => versions.mismatches.push(event.detail));

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

/**
 * A run of the OpenAI Agents SDK as plain data: its final output, its items' kinds (a tool call by the tool's item type),
 * its searches (status, queries, files found in order) and the message's citations, and how many model responses.
 */
async function agentRunSummary(result: { newItems: RunItem[]; rawResponses: unknown[]; finalOutput?: unknown }) {
  if (result instanceof StreamedRunResult) {
    // `for await (const event of result)` as the SDK's docs write it, where the browser can: the SDK iterates its
    // ReadableStream, and WebKit's has no [Symbol.asyncIterator] (webkit.org/b/194379); there, its reader.
    if (Symbol.asyncIterator in ReadableStream.prototype) {
      for await (const _event of result) void _event;
    } else {
      const reader = (result.toStream() as unknown as ReadableStream<unknown>).getReader();
      while (!(await reader.read()).done);
    }
    await result.completed;
  }
  return { finalOutput: result.finalOutput, responses: result.rawResponses.length, ...agentRunItems(result.newItems) };
}

const harness = {
  lantern,
  OpenAI,
  /** Structured-output clients, unmodified, for test/e2e/structured-output.spec.ts. */
  structured: { z, zodResponseFormat, generateObject, streamObject, createOpenAICompatible, ChatOpenAI },
  /** Tool-calling clients, unmodified, for test/e2e/tool-calls.spec.ts. */
  tools: { z, zodFunction, generateText, streamText, tool, stepCountIs, ChatOpenAI, langchainTool, HumanMessage },
  /** The Responses API's WebSocket mode in a page: openai-node's socket base, and Lantern's fetch-carried socket. */
  websocket: { ResponsesWSBase, LocalResponsesSocket },
  /** The Responses API's clients, for test/e2e/responses.spec.ts: the AI SDK's default OpenAI provider and its calls. */
  responses: { zodTextFormat, createOpenAI, generateText, streamText },
  /**
   * The OpenAI Agents SDK (agents-core and agents-openai), unmodified, for test/e2e/file-search.spec.ts; `summary` makes
   * a run's result plain data for the test.
   */
  agents: {
    Agent,
    Runner,
    tool: agentTool,
    fileSearchTool,
    OpenAIProvider,
    OpenAIConversationsSession,
    OpenAIResponsesCompactionSession,
    z,
    summary: agentRunSummary,
  },
  /**
   * The Agents SDK's voice agents (agents-realtime), unmodified, for test/e2e/realtime.spec.ts' WebRTC calls and
   * openai-surface.spec.ts' session on LocalRealtimeSocket.
   */
  realtime: {
    RealtimeSession,
    RealtimeAgent,
    OpenAIRealtimeWebRTC,
    OpenAIRealtimeWebSocket,
    LocalRealtimeSocket,
    tool: realtimeTool,
    z,
  },
  runs,
  progress,
  restarts,
  versions,
  /** The progress events seen at each call of navigator.storage.persist(), with ?countPersist. */
  persistCalls,
  /** web-llm's own answer to whether a model is in its caches (its `hasModelInCache`, from its prebuilt list). */
  webllmHasModel: async (id: string) => (await import('@mlc-ai/web-llm')).hasModelInCache(id),
  describeError,
  /** Issue 42's soak of mixed requests (test/support/soak.ts), for test/e2e/memory.spec.ts. */
  soakPlan,
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
