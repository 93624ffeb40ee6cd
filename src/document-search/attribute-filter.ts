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
      return actual !== undefined && (Array.isArray(value) ? value.includes(actual) : actual === value);
    case 'nin':
      return !(actual !== undefined && (Array.isArray(value) ? value.includes(actual) : actual === value));
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

/** Whether two values can be ordered: two numbers, or two strings. */
function orderedPair(a: unknown, b: unknown): boolean {
  return (typeof a === 'number' && typeof b === 'number') || (typeof a === 'string' && typeof b === 'string');
}
