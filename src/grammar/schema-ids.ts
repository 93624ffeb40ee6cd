import type { StepBudget } from './step-budget.ts';

/**
 * Structural identities of JSON values, for one compile: equal values (object keys in any order) get the same number,
 * so that a schema can be looked up, compared (`enum`, `const`, a `oneOf` written twice) and remembered by a number.
 * The compiler used to key its memo by `JSON.stringify` of each schema: subschemas that merges build anew are not
 * shared objects, so each lookup wrote the whole tree again (a 481 KB key for one place of the ANS schemas, issue 41).
 * Here each object is read once (a weak map remembers it by identity), and its identity is built from its keys and
 * its members' identities: a merge's new object costs its own keys only.
 *
 * @example
 * const ids = new SchemaIds(budget);
 * ids.of({ a: 1, b: [2] }) === ids.of({ b: [2], a: 1 }); // true
 */
export class SchemaIds {
  readonly #objects = new WeakMap<object, number>();
  /** Strings, numbers, booleans and `null` by their value; objects and arrays by the key of their members' ids. */
  readonly #values = new Map<unknown, number>();
  readonly #keys = new Map<string, number>();

  constructor(readonly budget: StepBudget) {}

  of(value: unknown): number {
    if (value === null || typeof value !== 'object') {
      // A step per 16 characters hashed.
      this.budget.spend(1 + (typeof value === 'string' ? value.length >> 4 : 0));
      return this.#intern(this.#values, value);
    }
    const known = this.#objects.get(value);
    if (known !== undefined) return known;
    let key: string;
    if (Array.isArray(value)) key = `[${value.map((item) => this.of(item)).join(',')}]`;
    else {
      const record = value as Record<string, unknown>;
      const names = Object.keys(record)
        .filter((name) => record[name] !== undefined)
        .sort();
      key = `{${names.map((name) => `${this.of(name)}:${this.of(record[name])}`).join(',')}}`;
    }
    // A step per four characters of the key (written, hashed, kept).
    this.budget.spend(1 + (key.length >> 2));
    const id = this.#intern(this.#keys, key);
    this.#objects.set(value, id);
    return id;
  }

  #intern<K>(table: Map<K, number>, key: K): number {
    let id = table.get(key);
    if (id === undefined) {
      // Two tables, one count: an object's id never equals a string's.
      id = this.#values.size + this.#keys.size;
      table.set(key, id);
    }
    return id;
  }
}
