/**
 * What tool calling costs, in Node, on the bundled tiny chat model: the grammar of a set of tools (structural tag,
 * each function's arguments) compiled against the model's vocabulary, cold and cached; the mask per token in free text
 * and inside a call; and the prompt tokens the declared tools add. Part of `npm run bench`; also runs alone:
 * `npx tsx bench/tool-calling.ts`.
 */
import type { ToolDefinition } from '../src/engine-interface/index.ts';
import { pathToFileURL } from 'node:url';
import { seededRandom } from '../src/generation/seeded-random.ts';
import { bundledProfile, createEngine } from '../src/index.ts';
import { chatRequest } from '../test/support/chat-request.ts';
import { grammarFor } from '../test/support/grammar-walk.ts';
import { BUNDLED_MODELS } from '../test/support/lantern.ts';
import { SCHEMA_CORPUS } from '../test/support/schema-corpus.ts';
import { GET_WEATHER, toolConstraint as constraint } from '../test/support/tools.ts';
import { median, p95, round } from './stats.ts';

const objects = SCHEMA_CORPUS.filter(({ schema }) => schema.type === 'object' && schema.properties);
const tools = (count: number, offset: number): ToolDefinition[] =>
  objects.slice(offset, offset + count).map(({ schema }, i) => ({ name: `fn_${offset + i}`, parameters: schema }));
/** Tool sets compiled per size (1, 4 and 12 tools); random walks through a grammar, and tokens each. */
export interface ToolCallingPlan {
  sets: number;
  walks: number;
  steps: number;
}
export const TOOL_CALLING_PLAN: ToolCallingPlan = { sets: 8, walks: 20, steps: 120 };
export const TOOL_CALLING_SMOKE_PLAN: ToolCallingPlan = { sets: 1, walks: 2, steps: 40 };

type Stats = { p50: number; p95: number; n: number };
export interface ToolCallingFigures {
  compileMs: Record<string, { cold: Stats; cached: Stats }>;
  maskMsPerToken: { freeText: Stats; insideCall: Stats };
  promptTokens: { none: number; get_weather: number };
}

export async function toolCallingBench(plan: ToolCallingPlan = TOOL_CALLING_PLAN): Promise<ToolCallingFigures> {
  const grammar = await grammarFor(`${BUNDLED_MODELS}/tiny-chat`, [2, 0]);
  const compile: Record<string, { cold: number[]; cached: number[] }> = {};
  for (const count of [1, 4, 12]) {
    const times: { cold: number[]; cached: number[] } = { cold: [], cached: [] };
    compile[`${count} tools`] = times;
    for (let offset = 0; offset + count <= objects.length && times.cold.length < plan.sets; offset += count) {
      const c = constraint(tools(count, offset));
      for (const kind of ['cold', 'cached'] as const) {
        const started = performance.now();
        (await grammar.compiler.matchers(c, 1)).forEach((m) => m.dispose());
        times[kind].push(performance.now() - started);
      }
    }
  }

  // The mask per token along random walks that enter a call: free text first, then the call's arguments.
  const free: number[] = [];
  const inCall: number[] = [];
  const opening = grammar.tokenizer.encode('<tool_call>', { add_special_tokens: false });
  for (let walk = 0; walk < plan.walks; walk++) {
    const [mask] = await grammar.compiler.matchers(constraint(tools(4, 0)), 1);
    const random = seededRandom(walk);
    const logits = new Float32Array(grammar.vocabulary.strings.length);
    let calling = false;
    for (let step = 0; step < plan.steps; step++) {
      logits.fill(0);
      const started = performance.now();
      mask!.apply(logits);
      (calling ? inCall : free).push(performance.now() - started);
      const allowed: number[] = [];
      for (let t = 0; t < logits.length; t++) if (logits[t] === 0 && t !== 2 && t !== 0) allowed.push(t);
      if (!allowed.length) break;
      const forced = step >= 5 ? opening[step - 5] : undefined;
      const token = forced ?? allowed[Math.floor(random() * allowed.length)]!;
      if (forced !== undefined) calling = true;
      if (!mask!.accept(token)) break;
    }
    mask!.dispose();
  }

  // Prompt tokens the tools add, on the bundled model (its own template).
  const engine = createEngine({ profile: bundledProfile(BUNDLED_MODELS) });
  const messages = [{ role: 'user' as const, content: 'What is the weather in Paris?' }];
  const promptTokens = async (set: ToolDefinition[]) => {
    const request = chatRequest({ messages, maxTokens: 1, ...(set.length && { constraint: constraint(set) }) });
    return (await engine.chat('crimson-falcon-4', request)).usage.promptTokens;
  };

  const stats = (xs: number[]) => ({ p50: round(median(xs), 3), p95: round(p95(xs), 3), n: xs.length });
  return {
    compileMs: Object.fromEntries(
      Object.entries(compile).map(([k, v]) => [k, { cold: stats(v.cold), cached: stats(v.cached) }]),
    ),
    maskMsPerToken: { freeText: stats(free), insideCall: stats(inCall) },
    promptTokens: { none: await promptTokens([]), get_weather: await promptTokens([GET_WEATHER]) },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(JSON.stringify(await toolCallingBench(), null, 2));
}
