import type { DecodeBatch } from './decode-loop.ts';
import { executesPlan, GREEDY_PLAN, type NativeStep, type StepOutput } from './sampling-plan.ts';
import { argmax } from './sampling.ts';

/**
 * Speculation with a draft model (Leviathan et al., 2023; llama.cpp's `--model-draft`, vLLM's draft speculator): a
 * small model with the target's tokenizer writes the next few tokens greedily, one cheap pass each, and the target
 * checks them all in one pass of its own. Drafts are greedy, so a proposal is one token at each position, which the
 * target takes where its own draw is that token: its distribution, and its draws under a seed, stay exactly its own.
 *
 * The draft runs on an engine's own DecodeBatch of the draft model, beside the target's, with its own keys and values:
 * one row, for the request whose row the target decodes alone. It follows that row's context (the prompt, then what
 * the target accepted and drew): each proposal first takes back what the target rejected and feeds what the draft has
 * not seen yet, in the same pass as its first draft token. A row of another request takes its place (the last one's
 * keys and values go to the draft batch's prefix reuse, so that the next turn starts from them). Beside other rows the
 * target's pass is shared and the draft's passes would hold every row up, so no draft is made there (as vLLM stops
 * speculating past a batch size).
 */
export class DraftModel<Prefill> {
  readonly #batch: DecodeBatch<Prefill>;
  /** The longest context the draft model takes, in tokens. */
  readonly #contextLength: number;
  /** The draft's draw, its most likely token, where its engine draws it (and hands that token alone over). */
  readonly #greedy: readonly NativeStep[] | undefined;
  /** The row the draft batch holds: whose it is, and every token it fed. */
  #row: { owner: object; held: number[]; scope: string | undefined } | undefined;
  /** The draft model failed: it proposes nothing more, and the target decodes as without it. */
  #broken = false;

  constructor(batch: DecodeBatch<Prefill>, contextLength: number) {
    this.#batch = batch;
    this.#contextLength = contextLength;
    this.#greedy = executesPlan(batch.executes, GREEDY_PLAN) ? [{ plan: GREEDY_PLAN, generated: [] }] : undefined;
  }

  /**
   * The draft's `length` greedy tokens after `context` (the prompt and every token of the target's row, the ones it
   * feeds next included), for the row `owner` (any object that stays the same for a row), at most fewer where the
   * draft's window ends. None for a context with positions that are not tokens (an image's: the draft reads text).
   */
  async propose(
    owner: object,
    context: readonly number[],
    length: number,
    scope: string | undefined,
  ): Promise<number[]> {
    length = Math.min(length, this.#contextLength - context.length);
    if (this.#broken || length <= 0 || context.some((token) => token < 0)) return [];
    try {
      let logits = await this.#follow(owner, context, scope);
      const row = this.#row!;
      const proposal: number[] = [];
      for (;;) {
        const token = logits instanceof Float32Array ? argmax(logits) : logits.token;
        proposal.push(token);
        if (proposal.length >= length) return proposal;
        logits = (await this.#batch.step([[token]], this.#greedy))(0);
        row.held.push(token);
      }
    } catch (error) {
      // A draft that fails costs the speed it would have won, never the request: the target goes on without it.
      this.#broken = true;
      this.#row = undefined;
      this.#batch.clear();
      console.warn('Lantern: the draft model failed; decoding goes on without it.', error);
      return [];
    }
  }

  /** The row `owner` is over: its keys and values go to the draft's prefix reuse. */
  async release(owner: object): Promise<void> {
    if (this.#row?.owner !== owner) return;
    const { held, scope } = this.#row;
    this.#row = undefined;
    await this.#batch.remove([{ row: 0, tokens: held, scope }], []).catch(() => this.#batch.clear());
  }

  /**
   * Brings the draft's row to `context` (starting it for a new owner from the draft's longest cached prefix), and
   * gives the logits after its last token.
   */
  async #follow(owner: object, context: readonly number[], scope: string | undefined): Promise<StepOutput> {
    const row = this.#row;
    if (row?.owner !== owner) {
      if (row) await this.release(row.owner);
      const { prefill, cached } = await this.#batch.begin(context, scope);
      const tokens = context.slice(cached);
      const logits = await this.#batch.fill(prefill, cached, context.length, { tokens }, true, this.#greedy?.[0]);
      await this.#batch.join(prefill, 1);
      this.#row = { owner, held: [...context], scope };
      return logits!;
    }
    // What the target rejected goes; at least the context's last token is fed again, for its logits.
    let common = 0;
    const limit = Math.min(row.held.length, context.length - 1);
    while (common < limit && row.held[common] === context[common]) common++;
    if (row.held.length > common) await this.#batch.retract!(0, row.held.length - common);
    row.held.length = common;
    const feed = context.slice(common);
    const logits = (await this.#batch.step([feed], this.#greedy))(0);
    row.held.push(...feed);
    return logits;
  }
}

/**
 * Checks that a draft model writes with the target's tokens: the same vocabulary (each id's token string), token for
 * token, as Qwen3-0.6B's and Qwen3-4B's are. A draft of another tokenizer would propose ids that mean other text.
 * `draftName` names it in the error.
 */
export function checkDraftVocabulary(target: readonly string[], draft: readonly string[], draftName: string): void {
  const differs = target.length !== draft.length ? 0 : target.findIndex((token, id) => token !== draft[id]);
  if (differs < 0) return;
  const at =
    target.length !== draft.length ? `${draft.length} tokens against ${target.length}` : `token ${differs} differs`;
  throw new Error(`${draftName} has another tokenizer than the model's (${at}): it cannot propose`);
}

/** What the generation core asks of a draft model (see DraftModel). */
export type Drafter = Pick<DraftModel<unknown>, 'propose' | 'release'>;

/**
 * A draft's proposal lengths (see ProposalLength): each token costs a pass of the draft model, so fewer than prompt
 * lookup's, which cost nothing to find.
 */
export const DRAFT_LENGTHS = { start: 4, min: 2, max: 8 };
