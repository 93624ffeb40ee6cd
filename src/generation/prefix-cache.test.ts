import { describe, expect, it } from 'vitest';
import { PrefixCache, sharedPrefix } from './prefix-cache.ts';

function cache(budget: number) {
  const freed: string[] = [];
  return { cache: new PrefixCache<string>(budget, (value) => freed.push(value)), freed };
}

describe('PrefixCache', () => {
  it('finds the row sharing the longest prefix, up to the limit', () => {
    const { cache: c } = cache(100);
    c.add([[1, 2, 3]], 10, 'a');
    c.add(
      [
        [1, 2, 9, 9],
        [1, 2, 4, 5, 6],
      ],
      10,
      'b',
    );
    expect(c.match([1, 2, 4, 5, 7])).toMatchObject({ entry: { value: 'b' }, row: 1, length: 4 });
    expect(c.match([1, 2, 3, 8])).toMatchObject({ entry: { value: 'a' }, row: 0, length: 3 });
    // The limit: at least one token of the prompt left to compute.
    expect(c.match([1, 2, 3], 2)).toMatchObject({ length: 2 });
    expect(c.match([7, 1, 2])).toBeUndefined();
  });

  it('evicts the least recently used past the budget, and frees what it evicts', () => {
    const { cache: c, freed } = cache(25);
    c.add([[1]], 10, 'a');
    c.add([[2]], 10, 'b');
    c.match([1, 0]); // a is now the most recently used
    c.add([[3]], 10, 'c');
    expect(freed).toEqual(['b']);
    expect(c.bytes).toBe(20);
    expect(c.match([2, 0])).toBeUndefined();
    expect(c.match([1, 0])?.entry.value).toBe('a');
  });

  it('keeps at most maxEntries entries, however few bytes they hold, evicting the least recently used', () => {
    const freed: string[] = [];
    const c = new PrefixCache<string>(1000, (value) => freed.push(value), 2);
    c.add([[1]], 1, 'a');
    c.add([[2]], 1, 'b');
    c.match([1, 0]); // a is now the most recently used
    c.add([[3]], 1, 'c');
    expect(freed).toEqual(['b']);
    expect(c.size).toBe(2);
    expect(c.bytes).toBe(2);
  });

  it('refuses (and frees) a value bigger than the whole budget; a budget of 0 caches nothing', () => {
    const { cache: c, freed } = cache(5);
    c.add([[1]], 6, 'big');
    expect(freed).toEqual(['big']);
    expect(c.size).toBe(0);
    const off = cache(0);
    off.cache.add([[1]], 1, 'x');
    expect(off.freed).toEqual(['x']);
  });

  it('drops entries the new one makes redundant (every row a prefix of one of its rows)', () => {
    const { cache: c, freed } = cache(100);
    c.add([[1, 2]], 10, 'turn 1');
    c.add([[1, 5]], 10, 'other');
    c.add(
      [
        [1, 2, 3],
        [1, 7, 7],
      ],
      10,
      'turn 2',
    );
    expect(freed).toEqual(['turn 1']);
    expect(c.size).toBe(2);
  });

  it("matches and makes redundant only entries of the prompt's own scope; scopes share the budget", () => {
    const { cache: c, freed } = cache(30);
    c.add([[1, 2, 3]], 10, 'a', 'key_a');
    expect(c.match([1, 2, 3, 4], 3, 'key_b')).toBeUndefined();
    expect(c.match([1, 2, 3, 4])).toBeUndefined(); // no scope is a scope of its own
    expect(c.match([1, 2, 3, 4], 3, 'key_a')).toMatchObject({ entry: { value: 'a' }, length: 3 });
    // Key B's longer copy leaves key A's entry in place; key A's own extension replaces it.
    c.add([[1, 2, 3, 4]], 10, 'b', 'key_b');
    expect(freed).toEqual([]);
    c.add([[1, 2, 3, 4]], 10, 'a2', 'key_a');
    expect(freed).toEqual(['a']);
    expect(c.match([1, 2, 3, 4, 5], 4, 'key_b')?.entry.value).toBe('b');
    c.add([[9]], 20, 'c', 'key_c');
    expect(freed).toEqual(['a', 'a2']); // the least recently used, of whichever scope
  });

  it('hands an entry over without freeing it', () => {
    const { cache: c, freed } = cache(100);
    c.add([[1, 2]], 10, 'a');
    const match = c.match([1, 2, 3])!;
    expect(c.take(match.entry)).toBe('a');
    expect(c.size).toBe(0);
    expect(c.bytes).toBe(0);
    expect(freed).toEqual([]);
    c.add([[4]], 10, 'b');
    c.clear();
    expect(freed).toEqual(['b']);
  });
});

describe('PrefixCache of values that cannot be cut back (recurrent states)', () => {
  it('matchWhole finds the longest row the tokens start with whole, up to the limit, never a shared part', () => {
    const { cache: c } = cache(100);
    c.add([[1, 2, 3]], 10, 'short', undefined, false);
    c.add([[1, 2, 3, 4, 5]], 10, 'long', undefined, false);
    c.add([[1, 2, 3, 4, 9, 9, 9]], 10, 'parted', undefined, false);
    expect(c.matchWhole([1, 2, 3, 4, 5, 6])).toMatchObject({ entry: { value: 'long' }, length: 5 });
    // `parted` shares more (4) but is not whole; `short` is.
    expect(c.matchWhole([1, 2, 3, 4, 8])).toMatchObject({ entry: { value: 'short' }, length: 3 });
    // The limit: all of `long` would leave no token to compute.
    expect(c.matchWhole([1, 2, 3, 4, 5], 4)).toMatchObject({ entry: { value: 'short' } });
    expect(c.matchWhole([1, 2, 3, 4, 5], 4, 'other scope')).toBeUndefined();
    expect(c.matchWhole([2, 3])).toBeUndefined();
  });

  it('with cuts off, a longer entry does not make a shorter one redundant; the same rows do', () => {
    const { cache: c, freed } = cache(100);
    c.add([[1, 2]], 10, 'a', undefined, false);
    c.add([[1, 2, 3]], 10, 'b', undefined, false);
    expect(freed).toEqual([]);
    c.add([[1, 2, 3]], 10, 'b again', undefined, false);
    expect(freed).toEqual(['b']);
    expect(c.size).toBe(2);
  });
});

describe('sharedPrefix', () => {
  it('counts leading equal tokens', () => {
    expect(sharedPrefix([1, 2, 3], [1, 2, 4])).toBe(2);
    expect(sharedPrefix([1, 2], [1, 2, 4])).toBe(2);
    expect(sharedPrefix([1, 2, 3], [1, 2, 3], 1)).toBe(1);
    expect(sharedPrefix([], [1])).toBe(0);
  });
});
