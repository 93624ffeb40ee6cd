import {
  throwIfAborted,
  type ChatEvent,
  type ChatRequest,
  type ChatResult,
  type TokenUsage,
} from '../engine-interface/index.ts';
import { rowSeed } from './decode-loop.ts';
import { seed31 } from './seeded-random.ts';

/** How a request run in turns reports, beyond the request. */
export interface TurnOptions {
  signal?: AbortSignal | undefined;
  /** Receives each event as it happens, named by its choice in the request. */
  onEvent?: ((event: ChatEvent) => void) | undefined;
}

/**
 * The seed choice `choice` of `request` draws from, as a request of one: the row seed the core gives that choice in a
 * batched run (the request's own for choice 0, `rowSeed` of all of it for the others; see `generateTokens`), so that a
 * choice run in its own turn draws what it draws beside the others. `base` is the request's seed in 31 bits, drawn once
 * for all of its choices (at random without one).
 */
export function turnSeed(request: ChatRequest, choice: number, base: number): number | undefined {
  return choice === 0 ? request.seed : rowSeed(base, choice);
}

/**
 * Runs `request`'s `n` choices one after another, each as a request of one (`runTurn`), for an engine that holds fewer
 * rows than the request has choices (a runtime of one sequence; an engine that runs a whole row per call): each turn is
 * seeded as its choice is in a batched run (`turnSeed`), so the answer is the one a batched run gives for the seed;
 * each turn's events go out under its choice's index; and the usage is the request's.
 *
 * The turns run from the last choice to the first, so that what the engine holds afterwards (a sequence's tokens, a
 * conversation's cache) is choice 0's, the one a client most likely continues.
 *
 * Usage: the prompt once, and of it, as cached, the tokens the first turn found cached. Every later turn starts from
 * the prefill that first turn made for this same request (a sequence's tokens, reused), which an engine reports as
 * cached; counting it again would call the request's own prompt reused, and could count more cached tokens than the
 * prompt has. Completion, reasoning and speculation are summed over the turns.
 */
export async function choicesInTurns(
  request: ChatRequest,
  options: TurnOptions,
  runTurn: (turn: ChatRequest, choice: number, options: TurnOptions) => Promise<ChatResult>,
): Promise<ChatResult> {
  const base = seed31(request.seed);
  const results: ChatResult[] = [];
  for (let choice = request.n - 1; choice >= 0; choice--) {
    throwIfAborted(options.signal);
    const seed = turnSeed(request, choice, base);
    const turn: ChatRequest = { ...request, n: 1, seed };
    if (seed === undefined) delete turn.seed;
    const onEvent = options.onEvent && ((event: ChatEvent) => options.onEvent!({ ...event, choice }));
    results[choice] = await runTurn(turn, choice, { signal: options.signal, onEvent });
  }
  return { choices: results.map((result) => result.choices[0]!), usage: requestUsage(results, request.n - 1) };
}

/** The usage of a request whose choices ran in turns (see choicesInTurns); `first`: the index of the turn that ran first. */
function requestUsage(results: readonly ChatResult[], first: number): TokenUsage {
  const { promptTokens, cachedPromptTokens } = results[first]!.usage;
  const sum = (field: keyof TokenUsage) => {
    if (results.every((result) => result.usage[field] === undefined)) return undefined;
    return results.reduce((total, result) => total + ((result.usage[field] as number | undefined) ?? 0), 0);
  };
  const usage: TokenUsage = { promptTokens, completionTokens: sum('completionTokens') ?? 0 };
  for (const field of ['reasoningTokens', 'acceptedPredictionTokens', 'rejectedPredictionTokens'] as const) {
    const total = sum(field);
    if (total !== undefined) usage[field] = total;
  }
  if (cachedPromptTokens) usage.cachedPromptTokens = cachedPromptTokens;
  return usage;
}
