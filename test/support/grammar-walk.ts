import { AutoTokenizer, type PreTrainedTokenizer } from '@huggingface/transformers';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { OutputConstraint } from '../../src/engine-interface/index.ts';
import { GrammarCompiler } from '../../src/grammar/grammar-mask.ts';
import { HERMES, type ToolCallSyntax } from '../../src/tools/tool-call-syntax.ts';
import { seededRandom } from '../../src/generation/seeded-random.ts';
import { readVocabulary, type TokenizerLike } from '../../src/grammar/token-bytes.ts';

/** ajv with ajv-formats: the reference validator every structured output of the tests is checked with. */
export function referenceValidator() {
  // ownProperties: by default ajv reads an absent property named `constructor` or `toString` from Object.prototype.
  const ajv = new Ajv2020({ strict: false, ownProperties: true });
  addFormats.default(ajv);
  return (schema: Record<string, unknown> | null, text: string): string | undefined => {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      return `not JSON: ${(error as Error).message}`;
    }
    if (schema === null)
      return value !== null && typeof value === 'object' && !Array.isArray(value) ? undefined : 'not an object';
    const validate = ajv.compile(schema);
    return validate(value) ? undefined : ajv.errorsText(validate.errors);
  };
}

/** A tokenizer and Lantern's grammar compiler for it. */
export async function grammarFor(folder: string, stops: number[]) {
  const tokenizer: PreTrainedTokenizer = await AutoTokenizer.from_pretrained(folder, {
    local_files_only: true,
  } as never);
  const vocabulary = readVocabulary(tokenizer as unknown as TokenizerLike);
  return { tokenizer, vocabulary, compiler: await GrammarCompiler.create(vocabulary, new Set(stops)), stops };
}

/**
 * Walks a constraint's grammar at random, as an adversarial model would: at each step any token the mask allows (the
 * end, once allowed, with probability `endBias`), after the tokens of `prefix`, which the mask must allow. Returns the
 * text of each walk that ended within `maxSteps`.
 */
export async function randomWalks(
  grammar: Awaited<ReturnType<typeof grammarFor>>,
  constraint: OutputConstraint,
  {
    walks = 4,
    maxSteps = 200,
    seed = 0,
    endBias = 0.7,
    prefix = [] as number[],
    syntax = HERMES as ToolCallSyntax,
    thinking = false,
  } = {},
): Promise<{ completed: string[]; unfinished: number }> {
  const { tokenizer, vocabulary, compiler, stops } = grammar;
  const masks = await compiler.matchers(constraint, walks, syntax, thinking);
  const completed: string[] = [];
  let unfinished = 0;
  masks.forEach((mask, w) => {
    const random = seededRandom(seed * 1000 + w);
    const logits = new Float32Array(vocabulary.strings.length);
    const ids: number[] = [];
    let ended = false;
    for (let step = 0; step < maxSteps && !ended; step++) {
      logits.fill(0);
      if (!mask.apply(logits)) throw new Error(`dead end after ${JSON.stringify(tokenizer.decode(ids))}`);
      const allowed: number[] = [];
      for (let t = 0; t < logits.length; t++) if (logits[t] === 0) allowed.push(t);
      const end = allowed.find((t) => stops.includes(t));
      const forced = prefix[step];
      if (forced !== undefined && !allowed.includes(forced)) throw new Error(`the mask refused token ${forced}`);
      const token =
        forced ?? (end !== undefined && random() < endBias ? end : allowed[Math.floor(random() * allowed.length)]!);
      if (!mask.accept(token)) throw new Error(`token ${token} allowed by the mask but rejected`);
      if (stops.includes(token)) ended = true;
      else ids.push(token);
    }
    mask.dispose();
    if (ended) completed.push(ids.length ? tokenizer.decode(ids, { skip_special_tokens: true }) : '');
    else unfinished++;
  });
  return { completed, unfinished };
}
