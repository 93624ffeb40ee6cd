/**
 * OpenAI's attribute filters, as the Vector Stores search (`filters`) and the `file_search` tool (`filters`) take them,
 * and the one function that says whether a chunk's attributes pass one.
 *
 * The wire shape is OpenAI's ComparisonFilter and CompoundFilter: `eq`, `ne`, `gt`, `gte`, `lt`, `lte`, `in`, `nin` on
 * one key, and `and`/`or` over a list of filters, nested freely. The API reference defines each operator by its name
 * alone ("gt: greater than"), so where it is silent this follows what a client can rely on everywhere: values compare
 * by type, never by coercion, so the string `"1"` is not the number `1` and `"10" > "9"` is false, as `"2024-10" >
 * "2024-9"` is too. Dates are meant to be compared as Unix timestamps (OpenAI's own example) or as ISO 8601 strings,
 * which order correctly as strings.
 *
 * @see https://platform.openai.com/docs/api-reference/vector-stores/search
 */

/**
 * How large a filter may be: a search evaluates it for every file of a store, and a request could otherwise nest
 * compound filters until validating them overflows the stack, or list millions of values. OpenAI documents none of
 * these; each is far above what a filter over 16 attributes needs. A filter over any of them is refused (400, on
 * `filters`) before the search runs.
 */
export const FILTER_LIMITS = Object.freeze({
  /** Compound filters nested in each other (a comparison inside `and` inside `or` is depth 3). */
  maxDepth: 16,
  /** Filters in all, compound and comparison. */
  maxFilters: 256,
  /** Values in one `in` or `nin` list, and in all of a filter's lists. */
  maxValues: 1_024,
});

/**
 * What is wrong with a filter's size, or undefined when it is within {@link FILTER_LIMITS}. It walks the value as a
 * request sent it, before any validation that recurses, with a stack of its own: any JSON value is safe to give it.
 */
export function filterSizeProblem(input: unknown): string | undefined {
  const stack: { node: unknown; depth: number }[] = [{ node: input, depth: 1 }];
  let filters = 0;
  let values = 0;
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    if (depth > FILTER_LIMITS.maxDepth) return `Filters may be nested at most ${FILTER_LIMITS.maxDepth} deep.`;
    if (++filters > FILTER_LIMITS.maxFilters) return `A filter may hold at most ${FILTER_LIMITS.maxFilters} filters.`;
    const { filters: inner, value } = node as { filters?: unknown; value?: unknown };
    if (Array.isArray(value)) {
      values += value.length;
      if (values > FILTER_LIMITS.maxValues)
        return `The lists of 'in' and 'nin' filters may hold at most ${FILTER_LIMITS.maxValues} values in all.`;
    }
    if (Array.isArray(inner)) for (const child of inner) stack.push({ node: child, depth: depth + 1 });
  }
  return undefined;
}

/** What an attribute holds: OpenAI's vector store files have up to 16 of them. */
export type AttributeValue = string | number | boolean;
export type Attributes = Record<string, AttributeValue>;

/** Compares one attribute with a value. `in` and `nin` take a list of values. */
export type ComparisonFilter = {
  type: 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte' | 'in' | 'nin';
  key: string;
  value: AttributeValue | AttributeValue[];
};
/** Every (`and`) or any (`or`) of its filters. */
export type CompoundFilter = { type: 'and' | 'or'; filters: (ComparisonFilter | CompoundFilter)[] };
/** OpenAI's filters, as the Vector Stores search and file_search take them. */
export type AttributeFilter = ComparisonFilter | CompoundFilter;

/**
 * Whether attributes pass a filter.
 *
 * - `eq` is true when the key is present and holds the same value, of the same type; `ne` is its negation, so a chunk
 *   without the key passes `ne` (it is not equal to anything).
 * - `gt`, `gte`, `lt`, `lte` compare a number with a number, or a string with a string (by UTF-16 code units, the
 *   order in which ISO 8601 dates sort); anything else (a missing key, a boolean, mixed types) fails them, and so
 *   fails their negation too: `lt 5` and `gte 5` are both false for a key holding `"abc"`.
 * - `in` is true when the key is present and its value is one of the listed ones; `nin` is its negation, so a chunk
 *   without the key passes `nin`. A single value where a list is expected is taken as a list of one.
 * - `and` of no filters is true, and `or` of none false (the empty product and the empty sum).
 *
 * @example
 * matchesFilter({ region: 'eu', year: 2024 }, {
 *   type: 'and',
 *   filters: [{ type: 'in', key: 'region', value: ['eu', 'us'] }, { type: 'gte', key: 'year', value: 2023 }],
 * }); // true
 */
export function matchesFilter(attributes: Attributes, filter: AttributeFilter): boolean {
  switch (filter.type) {
    case 'and':
      return filter.filters.every((inner) => matchesFilter(attributes, inner));
    case 'or':
      return filter.filters.some((inner) => matchesFilter(attributes, inner));
  }
  // `Object.hasOwn`: an attribute named `constructor` or `toString` is the caller's, not the prototype's.
  const actual = Object.hasOwn(attributes, filter.key) ? attributes[filter.key] : undefined;
  const { value } = filter;
  switch (filter.type) {
    case 'eq':
      return actual !== undefined && actual === value;
    case 'ne':
      return !(actual !== undefined && actual === value);
    case 'in':
      return actual !== undefined && listed(value, actual);
    case 'nin':
      return !(actual !== undefined && listed(value, actual));
    case 'gt':
      return orderedPair(actual, value) && actual! > (value as number | string);
    case 'gte':
      return orderedPair(actual, value) && actual! >= (value as number | string);
    case 'lt':
      return orderedPair(actual, value) && actual! < (value as number | string);
    case 'lte':
      return orderedPair(actual, value) && actual! <= (value as number | string);
  }
}

/** Each `in` and `nin` list as a set, made once however many files the filter is evaluated for. */
const listSets = new WeakMap<AttributeValue[], Set<AttributeValue>>();

/** Whether an `in` list holds a value (of the same type: a Set compares as `===` does). */
function listed(value: AttributeValue | AttributeValue[], actual: AttributeValue): boolean {
  if (!Array.isArray(value)) return actual === value;
  let set = listSets.get(value);
  if (set === undefined) listSets.set(value, (set = new Set(value)));
  return set.has(actual);
}

/** Whether two values can be ordered: two numbers, or two strings. */
function orderedPair(a: unknown, b: unknown): boolean {
  return (typeof a === 'number' && typeof b === 'number') || (typeof a === 'string' && typeof b === 'string');
}
