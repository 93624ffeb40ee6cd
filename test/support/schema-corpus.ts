/**
 * The project's own corpus of JSON schemas for structured output: hand-written schemas shaped like real ones (what
 * zod, Pydantic and hand-written OpenAI requests produce), then generated variants of every keyword Lantern enforces
 * (DESIGN "Wave 2"; README "Structured output"). Deterministic: the same list on every run, nothing downloaded.
 * Used by the corpus test (every output validated with ajv), by `npm run bench` (compile time) and by the library
 * measurement (bench/structured-output-libraries.ts).
 */

export type JsonSchema = Record<string, unknown>;

export interface CorpusSchema {
  /** Unique, says what the schema exercises. */
  name: string;
  schema: JsonSchema;
}

const obj = (properties: Record<string, JsonSchema>, required = Object.keys(properties), extra: JsonSchema = {}) => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
  ...extra,
});

const str = (extra: JsonSchema = {}): JsonSchema => ({ type: 'string', ...extra });
const int = (extra: JsonSchema = {}): JsonSchema => ({ type: 'integer', ...extra });
const num = (extra: JsonSchema = {}): JsonSchema => ({ type: 'number', ...extra });
const bool: JsonSchema = { type: 'boolean' };

/** Hand-written schemas in the shapes apps send. */
const HAND_WRITTEN: CorpusSchema[] = [
  { name: 'person', schema: obj({ name: str({ maxLength: 20 }), age: int({ minimum: 0, maximum: 120 }) }) },
  {
    name: 'address',
    schema: obj({ street: str({ maxLength: 30 }), city: str({ maxLength: 20 }), zip: str({ pattern: '^[0-9]{5}$' }) }, [
      'street',
      'city',
    ]),
  },
  {
    name: 'order with line items',
    schema: obj({
      id: str({ format: 'uuid' }),
      items: {
        type: 'array',
        minItems: 1,
        maxItems: 3,
        items: obj({ sku: str({ pattern: '^[A-Z]{3}-[0-9]{3}$' }), quantity: int({ minimum: 1, maximum: 9 }) }),
      },
      status: { enum: ['pending', 'paid', 'shipped'] },
    }),
  },
  {
    name: 'calendar event',
    schema: obj({
      title: str({ minLength: 1, maxLength: 24 }),
      start: str({ format: 'date-time' }),
      day: str({ format: 'date' }),
      attendees: { type: 'array', maxItems: 2, items: str({ format: 'email' }) },
    }),
  },
  {
    name: 'bookmark',
    schema: obj({ url: str({ format: 'uri' }), tags: { type: 'array', maxItems: 3, items: str({ maxLength: 8 }) } }),
  },
  {
    name: 'weather report',
    schema: obj({
      city: str({ maxLength: 16 }),
      temperature: num({ minimum: -50, maximum: 60 }),
      unit: { enum: ['celsius', 'fahrenheit'] },
      raining: bool,
    }),
  },
  {
    name: 'recipe',
    schema: obj({
      title: str({ maxLength: 24 }),
      servings: int({ minimum: 1, maximum: 12 }),
      ingredients: {
        type: 'array',
        minItems: 1,
        maxItems: 4,
        items: obj({ name: str({ maxLength: 12 }), grams: int({ minimum: 1, maximum: 999 }) }),
      },
    }),
  },
  {
    name: 'recursive tree ($defs, $ref)',
    schema: {
      $defs: {
        node: obj({
          label: str({ maxLength: 6 }),
          children: { type: 'array', maxItems: 2, items: { $ref: '#/$defs/node' } },
        }),
      },
      $ref: '#/$defs/node',
    },
  },
  {
    name: 'linked list (recursive, nullable next)',
    schema: {
      $defs: {
        cell: obj({
          value: int({ minimum: 0, maximum: 9 }),
          next: { anyOf: [{ $ref: '#/$defs/cell' }, { type: 'null' }] },
        }),
      },
      $ref: '#/$defs/cell',
    },
  },
  {
    name: 'tagged union (oneOf, const discriminator)',
    schema: obj({
      shape: {
        oneOf: [
          obj({ kind: { const: 'circle' }, radius: num({ minimum: 0, maximum: 10 }) }),
          obj({ kind: { const: 'square' }, side: num({ minimum: 0, maximum: 10 }) }),
        ],
      },
    }),
  },
  {
    name: 'zod-style nullable fields',
    schema: obj({ name: str({ maxLength: 12 }), nickname: { anyOf: [str({ maxLength: 12 }), { type: 'null' }] } }),
  },
  {
    name: 'zod-style definitions',
    schema: {
      type: 'object',
      properties: { author: { $ref: '#/definitions/user' }, reviewer: { $ref: '#/definitions/user' } },
      required: ['author', 'reviewer'],
      additionalProperties: false,
      definitions: { user: obj({ email: str({ format: 'email' }) }) },
    },
  },
  {
    name: 'classification',
    schema: obj({ label: { enum: ['positive', 'negative', 'neutral'] }, confidence: num({ minimum: 0, maximum: 1 }) }),
  },
  {
    name: 'extraction with optional fields',
    schema: obj(
      { name: str({ maxLength: 16 }), phone: str({ pattern: '^\\+?[0-9]{7,12}$' }), email: str({ format: 'email' }) },
      ['name'],
    ),
  },
  {
    name: 'json-rpc request',
    schema: obj({ jsonrpc: { const: '2.0' }, method: str({ maxLength: 12 }), id: int({ minimum: 1, maximum: 999 }) }),
  },
  { name: 'top-level array', schema: { type: 'array', minItems: 1, maxItems: 3, items: str({ maxLength: 5 }) } },
  { name: 'top-level enum', schema: { enum: ['yes', 'no', 'maybe'] } },
  { name: 'top-level integer', schema: int({ minimum: 10, maximum: 99 }) },
  {
    name: 'title and description annotations',
    schema: {
      title: 'Thing',
      description: 'A thing.',
      ...obj({ x: { ...int({ minimum: 0, maximum: 5 }), description: 'x' } }),
    },
  },
  {
    name: 'matrix (nested arrays)',
    schema: {
      type: 'array',
      minItems: 2,
      maxItems: 2,
      items: { type: 'array', minItems: 2, maxItems: 2, items: int({ minimum: 0, maximum: 9 }) },
    },
  },
  {
    name: 'open object (additionalProperties true)',
    schema: {
      type: 'object',
      properties: { a: int({ minimum: 0, maximum: 3 }) },
      required: ['a'],
      additionalProperties: true,
    },
  },
  {
    name: 'map of integers (additionalProperties schema)',
    schema: { type: 'object', additionalProperties: int({ minimum: 0, maximum: 9 }), maxProperties: 3 },
  },
  { name: 'json_object equivalent', schema: { type: 'object' } },
  {
    name: 'form answers',
    schema: obj({
      agree: bool,
      rating: int({ minimum: 1, maximum: 5 }),
      comment: { anyOf: [str({ maxLength: 20 }), { type: 'null' }] },
      when: str({ format: 'date' }),
    }),
  },
  {
    name: 'step list',
    schema: obj({
      steps: {
        type: 'array',
        minItems: 1,
        maxItems: 3,
        items: obj({ n: int({ minimum: 1, maximum: 9 }), text: str({ maxLength: 10 }) }),
      },
    }),
  },
];

/** Each generator gives variant `i` of one keyword family; `count` variants of each go into the corpus. */
interface Family {
  family: string;
  count: number;
  make: (i: number) => JsonSchema;
}

const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'omega', 'red', 'green', 'blue', 'north', 'south', 'one', 'two'];
const word = (i: number) => WORDS[i % WORDS.length]!;
const words = (i: number, n: number) => Array.from({ length: n }, (_, k) => word(i + k * 5));
const FORMATS = ['date-time', 'date', 'email', 'uuid', 'uri'] as const;
const PATTERNS = [
  '^[a-z]{3}$',
  '^[0-9]{2}-[0-9]{2}$',
  '^(yes|no)$',
  '^[A-Z][a-z]{1,5}$',
  '^#[0-9a-f]{6}$',
  '^v[0-9]\\.[0-9]$',
  '^[a-z]+@[a-z]+\\.com$',
  '^(\\+|-)?[0-9]{1,3}$',
  '^[A-Z]{2}[0-9]{2}$',
  '^(ab)+$',
];

const FAMILIES: Family[] = [
  {
    family: 'nested objects',
    count: 16,
    make: (i) => {
      let inner: JsonSchema = obj({ [word(i)]: int({ minimum: 0, maximum: i + 1 }) });
      for (let depth = 0; depth < 1 + (i % 4); depth++) inner = obj({ [word(i + depth + 1)]: inner, flag: bool });
      return inner;
    },
  },
  {
    family: 'arrays with minItems/maxItems',
    count: 20,
    make: (i) => {
      const min = i % 3;
      const items = [
        int({ minimum: 0, maximum: 9 }),
        str({ maxLength: 4 }),
        bool,
        obj({ k: int({ minimum: 0, maximum: 3 }) }),
      ][i % 4]!;
      return obj({ list: { type: 'array', minItems: min, maxItems: min + 1 + (i % 3), items } });
    },
  },
  {
    family: 'enum',
    count: 18,
    make: (i) => {
      const values: unknown[] =
        i % 3 === 0 ? words(i, 2 + (i % 5)) : i % 3 === 1 ? [1, 2, 3, i + 10] : [word(i), 7, null, true];
      return i % 2 ? obj({ choice: { enum: values } }) : { enum: values };
    },
  },
  {
    family: 'const',
    count: 12,
    make: (i) => {
      const values: unknown[] = [word(i), i, true, null, { nested: word(i) }, [1, word(i)]];
      return obj({ fixed: { const: values[i % values.length] }, other: int({ minimum: 0, maximum: 3 }) });
    },
  },
  {
    family: 'anyOf',
    count: 16,
    make: (i) =>
      obj({
        value: {
          anyOf: [
            int({ minimum: 0, maximum: 9 + i }),
            str({ maxLength: 3 + (i % 4) }),
            ...(i % 2 ? [{ type: 'null' }] : []),
            ...(i % 3 === 0 ? [obj({ x: bool })] : []),
          ],
        },
      }),
  },
  {
    family: 'oneOf with disjoint alternatives',
    count: 14,
    make: (i) =>
      i % 2
        ? obj({ v: { oneOf: [int({ minimum: 0, maximum: 5 }), str({ maxLength: 3 + (i % 3) }), { type: 'null' }] } })
        : {
            oneOf: words(i, 2 + (i % 3)).map((w, k) =>
              obj({ type: { const: `${w}${k}` }, payload: k % 2 ? bool : int({ minimum: 0, maximum: 9 }) }),
            ),
          },
  },
  {
    family: '$ref and $defs',
    count: 16,
    make: (i) => {
      if (i % 4 === 0) {
        // Recursive: a tree of bounded width.
        return {
          $defs: {
            t: obj({
              v: int({ minimum: 0, maximum: 9 }),
              kids: { type: 'array', maxItems: 1 + (i % 2), items: { $ref: '#/$defs/t' } },
            }),
          },
          $ref: '#/$defs/t',
        };
      }
      if (i % 4 === 1) {
        // Recursive through an optional property.
        return {
          $defs: { n: obj({ name: str({ maxLength: 4 }), child: { $ref: '#/$defs/n' } }, ['name']) },
          $ref: '#/$defs/n',
        };
      }
      const shared = obj({ [word(i)]: str({ maxLength: 5 }), n: int({ minimum: 0, maximum: i }) });
      return {
        type: 'object',
        properties: { first: { $ref: '#/$defs/shared' }, second: { $ref: '#/$defs/shared' } },
        required: i % 4 === 2 ? ['first', 'second'] : ['first'],
        additionalProperties: false,
        $defs: { shared },
      };
    },
  },
  {
    family: 'optional properties',
    count: 18,
    make: (i) => {
      const props: Record<string, JsonSchema> = {};
      words(i, 3 + (i % 3)).forEach(
        (w, k) => (props[`${w}_${k}`] = k % 2 ? int({ minimum: 0, maximum: 9 }) : str({ maxLength: 4 })),
      );
      const keys = Object.keys(props);
      return obj(
        props,
        keys.filter((_, k) => (k + i) % 3 === 0),
      );
    },
  },
  {
    family: 'additionalProperties',
    count: 14,
    make: (i) => {
      const base = { type: 'object', properties: { id: int({ minimum: 0, maximum: 9 }) }, required: ['id'] };
      const extra = [false, true, int({ minimum: 0, maximum: 5 }), str({ maxLength: 3 }), bool][i % 5];
      return { ...base, additionalProperties: extra, ...(extra !== false && { maxProperties: 2 + (i % 2) }) };
    },
  },
  {
    family: 'string formats',
    count: 20,
    make: (i) => {
      const format = FORMATS[i % FORMATS.length]!;
      return i % 2
        ? obj({ value: str({ format }) })
        : obj({ values: { type: 'array', minItems: 1, maxItems: 2, items: str({ format }) } });
    },
  },
  {
    family: 'pattern',
    count: 20,
    make: (i) => {
      const pattern = PATTERNS[i % PATTERNS.length]!;
      return i % 2
        ? obj({ code: str({ pattern }) })
        : obj({ codes: { type: 'array', maxItems: 2, items: str({ pattern }) } });
    },
  },
  {
    family: 'minLength/maxLength',
    count: 18,
    make: (i) => {
      const min = i % 4;
      return obj({
        text: str({ minLength: min, maxLength: min + 1 + (i % 6) }),
        ...(i % 3 === 0 && { tag: str({ minLength: 2, maxLength: 2 }) }),
      });
    },
  },
  {
    family: 'numeric bounds',
    count: 22,
    make: (i) => {
      const lo = (i % 5) * 3 - 6;
      const bounds: JsonSchema[] = [
        { minimum: lo, maximum: lo + 10 },
        { exclusiveMinimum: lo, maximum: lo + 5 },
        { minimum: lo, exclusiveMaximum: lo + 7 },
        { exclusiveMinimum: lo, exclusiveMaximum: lo + 9 },
        { minimum: lo },
        { maximum: lo },
      ];
      const b = bounds[i % bounds.length]!;
      return obj({ n: i % 2 ? int(b) : num(b) });
    },
  },
  {
    family: 'combinations',
    count: 16,
    make: (i) =>
      obj(
        {
          id: str({ format: FORMATS[i % 3 === 0 ? 3 : 0]! }),
          kind: { enum: words(i, 3) },
          tags: { type: 'array', maxItems: 2, items: str({ pattern: PATTERNS[i % PATTERNS.length]! }) },
          score: num({ minimum: 0, maximum: 100 }),
          meta: { anyOf: [obj({ note: str({ maxLength: 6 }) }), { type: 'null' }] },
        },
        ['id', 'kind', ...(i % 2 ? ['tags'] : []), ...(i % 3 ? ['score'] : [])],
      ),
  },
];

/** The whole corpus: hand-written schemas first, then every family's variants. */
export const SCHEMA_CORPUS: readonly CorpusSchema[] = Object.freeze([
  ...HAND_WRITTEN,
  ...FAMILIES.flatMap(({ family, count, make }) =>
    Array.from({ length: count }, (_, i) => ({ name: `${family} #${i}`, schema: make(i) })),
  ),
]);
