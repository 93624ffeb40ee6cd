/**
 * A count of the work the schemas of one request may cost, shared by every part of their compile (schema-merge.ts,
 * schema-grammar.ts, regex-grammar.ts, regex-match.ts; constraint-check.ts gives a request one budget) and by the
 * validation of one output (output-constraint.ts). Width and depth bounds
 * alone let work multiply: the Washington Post's ANS content schemas (about 120 KB, under every request limit) made the
 * compile re-expand nested `allOf`s 20 million times until Node's heap ran out after 25–95 s (issue 41). Each loop
 * whose length the schema decides spends here, in proportion to what it walks or allocates, so the budget bounds both
 * time and memory.
 */

/**
 * Steps the schemas of one request may take to compile (and one output to validate). Measured on this project's 2-core
 * machine (Node 20), each in a fresh process: the schemas that spend it fastest (merges of wide `allOf`s, crossed
 * `anyOf`s, patterns matched against long values, automata of counted repeats, `not` of many numbers, objects of
 * counted properties, 128 tools) exhaust it in 0.05 to 0.3 s of CPU holding at most about 35 MB, while the largest
 * real schemas that compile (test/fixtures/schemas/large: the ANS content schemas, Kubernetes' Volume, SARIF) need
 * 0.07 to 0.19 million steps, five times fewer.
 */
export const MAX_STEPS = 1_000_000;

/** Work past the budget: the message says which budget and what needed it. */
export class StepBudgetExceeded extends Error {}

/**
 * A budget of steps. `spend` counts and throws {@link StepBudgetExceeded} past the limit; `once` spends for a key only
 * the first time (a pattern's automaton, built once and cached across requests, is charged once per compile, so that
 * what a schema costs never depends on what other requests cached).
 *
 * @example
 * const budget = new StepBudget('the schema needs more than %d steps to compile');
 * budget.spend(Object.keys(schema).length);
 */
export class StepBudget {
  #spent = 0;
  readonly #charged = new Set<string>();

  /** `what`: the refusal's words, `%d` standing for the limit. */
  constructor(
    readonly what: string,
    readonly limit = MAX_STEPS,
  ) {}

  /** Steps spent so far. */
  get spent(): number {
    return this.#spent;
  }

  spend(steps: number): void {
    this.#spent += steps;
    if (this.#spent > this.limit)
      throw new StepBudgetExceeded(this.what.replace('%d', this.limit.toLocaleString('en')));
  }

  once(key: string, steps: number): void {
    if (this.#charged.has(key)) return;
    this.#charged.add(key);
    this.spend(steps);
  }
}
