import { describe, expect, it } from 'vitest';
import {
  type AttributeFilter,
  type Attributes,
  type ComparisonFilter,
  FILTER_LIMITS,
  filterSizeProblem,
  matchesFilter,
} from './attribute-filter.ts';

const doc: Attributes = { region: 'eu', year: 2024, draft: false, updated: '2024-03-18', score: 0.5 };
const passes = (filter: AttributeFilter, attributes: Attributes = doc) => matchesFilter(attributes, filter);

describe('matchesFilter', () => {
  it.each([
    // [operator, key, value, expected]
    ['eq', 'region', 'eu', true],
    ['eq', 'region', 'us', false],
    ['eq', 'year', 2024, true],
    ['eq', 'year', '2024', false], // no coercion between strings and numbers
    ['eq', 'draft', false, true],
    ['eq', 'draft', 0, false],
    ['eq', 'missing', 'eu', false],
    ['ne', 'region', 'us', true],
    ['ne', 'region', 'eu', false],
    ['ne', 'missing', 'eu', true], // a chunk without the key is not equal to anything
    ['gt', 'year', 2023, true],
    ['gt', 'year', 2024, false],
    ['gte', 'year', 2024, true],
    ['lt', 'score', 0.75, true],
    ['lt', 'score', 0.5, false],
    ['lte', 'score', 0.5, true],
    ['gte', 'updated', '2024-01-01', true], // ISO dates order as strings
    ['lt', 'updated', '2024-01-01', false],
    ['gt', 'region', 'ab', true], // strings compare lexicographically
    ['gt', 'year', '2000', false], // a number is not ordered against a string
    ['lt', 'year', '3000', false],
    ['gt', 'draft', false, false], // nor are booleans ordered
    ['gt', 'missing', 0, false],
    ['lte', 'missing', 0, false],
    ['in', 'region', ['us', 'eu'], true],
    ['in', 'region', ['us', 'apac'], false],
    ['in', 'year', [2023, 2024], true],
    ['in', 'year', ['2024'], false],
    ['in', 'region', 'eu', true], // a single value is a list of one
    ['in', 'missing', ['eu'], false],
    ['nin', 'region', ['us', 'apac'], true],
    ['nin', 'region', ['us', 'eu'], false],
    ['nin', 'missing', ['eu'], true],
  ] as const)('%s %s %j is %s', (type, key, value, expected) => {
    expect(passes({ type, key, value: value as ComparisonFilter['value'] })).toBe(expected);
  });

  it('reads only the attributes’ own keys, not the prototype’s', () => {
    expect(passes({ type: 'ne', key: 'constructor', value: 'x' }, {})).toBe(true);
    expect(passes({ type: 'in', key: 'toString', value: ['x'] }, {})).toBe(false);
    expect(passes({ type: 'eq', key: 'constructor', value: 'x' }, { constructor: 'x' })).toBe(true);
  });

  it('combines filters with and/or, nested to any depth', () => {
    const euOrUs: AttributeFilter = {
      type: 'or',
      filters: [
        { type: 'eq', key: 'region', value: 'eu' },
        { type: 'eq', key: 'region', value: 'us' },
      ],
    };
    const recentEuOrUs: AttributeFilter = { type: 'and', filters: [euOrUs, { type: 'gte', key: 'year', value: 2024 }] };
    expect(passes(recentEuOrUs)).toBe(true);
    expect(passes(recentEuOrUs, { ...doc, year: 2022 })).toBe(false);
    expect(passes(recentEuOrUs, { ...doc, region: 'apac' })).toBe(false);
    const notDraftOrOld: AttributeFilter = {
      type: 'or',
      filters: [
        { type: 'and', filters: [recentEuOrUs, { type: 'eq', key: 'draft', value: true }] },
        { type: 'lt', key: 'year', value: 2000 },
      ],
    };
    expect(passes(notDraftOrOld)).toBe(false);
    expect(passes(notDraftOrOld, { ...doc, draft: true })).toBe(true);
    expect(passes(notDraftOrOld, { year: 1999 })).toBe(true);
  });

  it('takes `and` of nothing as true and `or` of nothing as false', () => {
    expect(passes({ type: 'and', filters: [] })).toBe(true);
    expect(passes({ type: 'or', filters: [] })).toBe(false);
  });

  it('looks values up in a long list as a set, by type, the same list reused', () => {
    const list = [...Array.from({ length: 1_000 }, (_, i) => i), 'eu'];
    const filter: AttributeFilter = { type: 'in', key: 'year', value: list };
    expect(passes(filter, { year: 999 })).toBe(true);
    expect(passes(filter, { year: '999' })).toBe(false);
    expect(passes(filter, { year: 1_000 })).toBe(false);
    expect(passes({ type: 'nin', key: 'region', value: list })).toBe(false);
  });
});

describe('filterSizeProblem', () => {
  it('measures any JSON value without recursion, and names the limit it passes', () => {
    let deep: unknown = { type: 'eq', key: 'a', value: 1 };
    for (let i = 0; i < 100_000; i++) deep = { type: 'and', filters: [deep] };
    expect(filterSizeProblem(deep)).toBe(`Filters may be nested at most ${FILTER_LIMITS.maxDepth} deep.`);
    expect(filterSizeProblem({ type: 'in', key: 'a', value: new Array(1_025).fill(0) })).toMatch(/at most 1024 values/);
    expect(filterSizeProblem({ type: 'in', key: 'a', value: new Array(1_024).fill(0) })).toBeUndefined();
    expect(filterSizeProblem('not a filter')).toBeUndefined(); // the schema refuses it, naming what is wrong
    expect(filterSizeProblem(null)).toBeUndefined();
  });
});
