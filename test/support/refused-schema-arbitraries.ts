import fc from 'fast-check';
import {
  defName,
  escapedDefName,
  leafSchema,
  objectOf,
  plain,
  pointer,
  propertiesOf,
  propertyName,
  regex,
  supportedSchema,
  type JsonSchema,
  type SchemaCase,
} from './schema-arbitraries.ts';

/**
 * fast-check arbitraries of JSON Schemas holding one thing Lantern refuses (README "Structured output", "Refused"),
 * each with the words its 400 must name; and {@link schemaCase}, which mixes them with supported ones.
 */

/** One thing Lantern refuses, as a subschema, with the words the refusal must name. */
const refusedNode: fc.Arbitrary<{ node: JsonSchema; named: string }> = fc.oneof(
  leafSchema.map((s) => ({ node: { ...s, not: { const: 1 } }, named: '`not`' })),
  fc.tuple(leafSchema, leafSchema).map(([a, b]) => ({ node: { allOf: [a, b] }, named: '`allOf`' })),
  fc
    .tuple(fc.constantFrom('if', 'then', 'else'), leafSchema)
    .map(([k, s]) => ({ node: { type: 'string', [k]: s }, named: `\`${k}\`` })),
  fc
    .constantFrom(
      ['dependencies', { a: ['b'] }],
      ['dependentRequired', { a: ['b'] }],
      ['dependentSchemas', { a: { required: ['b'] } }],
      ['patternProperties', { '^x': { type: 'string' } }],
      ['propertyNames', { maxLength: 3 }],
      ['unevaluatedProperties', false],
      ['minProperties', 1],
    )
    .map(([k, v]) => ({
      node: objectOf([['a', { type: 'boolean' }, false]], { [k as string]: v }),
      named: `\`${k as string}\``,
    })),
  fc
    .constantFrom(
      ['unevaluatedItems', false],
      ['contains', { const: 1 }],
      ['minContains', 1],
      ['maxContains', 2],
      ['uniqueItems', true],
    )
    .map(([k, v]) => ({
      node: { type: 'array', items: { type: 'integer' }, [k as string]: v },
      named: `\`${k as string}\``,
    })),
  fc
    .tuple(fc.constantFrom('integer', 'number'), fc.integer({ min: 2, max: 7 }))
    .map(([type, multipleOf]) => ({ node: { type, multipleOf }, named: '`multipleOf`' })),
  fc
    .constantFrom<[string, string]>(['$dynamicRef', '#meta'], ['$recursiveRef', '#'])
    .map(([k, v]) => ({ node: { [k]: v }, named: `\`${k}\`` })),
  fc
    .constantFrom('hostname', 'ipv6', 'duration', 'regex', 'uri-reference', 'json-pointer', 'idn-email', 'int32')
    .map((format) => ({ node: { type: 'string', format }, named: `\`format: "${format}"\`` })),
  fc
    .oneof(
      fc.constantFrom('https://example.com/s.json', 'other.json#/a', 'urn:x:y'),
      defName.map((name) => `#/$defs/${pointer(name)}`),
      fc.constantFrom('#/properties/missing', '#/definitions/toString', '#/$defs/__proto__'),
    )
    .map(($ref) => ({ node: { $ref }, named: `\`$ref: "${$ref}"\`` })),
  fc
    .constantFrom('exclusiveMinimum', 'exclusiveMaximum')
    .map((k) => ({ node: { type: 'number', minimum: 0, maximum: 9, [k]: true }, named: 'draft-04' })),
  fc
    .tuple(regex, fc.constantFrom('minLength', 'maxLength'))
    .map(([pattern, k]) => ({ node: { type: 'string', pattern, [k]: 3 }, named: '`pattern` together with' })),
  fc.integer({ min: 65, max: 80 }).map((n) => ({
    node: { enum: Array.from({ length: n }, (_, i) => `v${i}`) },
    named: 'more than 64 values',
  })),
  fc.constantFrom('minItems', 'maxItems').map((k) => ({ node: { type: 'array', [k]: 2 }, named: 'without `items`' })),
  fc
    .record({ entries: propertiesOf(leafSchema), missing: propertyName })
    .filter(({ entries, missing }) => !entries.some(([name]) => name === missing))
    .map(({ entries, missing }) => {
      const node = objectOf(entries);
      (node.required as string[]).push(missing);
      return { node, named: `\`required\` names \`${missing}\`` };
    }),
  propertyName.map((name) => ({
    node: { type: 'object', required: [name] },
    named: `\`required\` names \`${name}\``,
  })),
  fc
    .constantFrom(
      ['(?=a)b', 'a lookaround'],
      ['x(?<!a)', 'a lookaround'],
      ['(a)\\1', 'a backreference'],
      ['\\bword', 'a word boundary'],
      ['\\p{L}+', 'a Unicode property escape'],
      ['a{,3}', 'not a valid regular expression'],
      ['(x|yz)?{0,2}', 'not a valid regular expression'],
      ['[a-', 'not a valid regular expression'],
    )
    .map(([pattern, why]) => ({ node: { type: 'string', pattern }, named: `(${why})` })),
  fc
    .tuple(
      fc.constantFrom('integer', 'number'),
      fc.constantFrom('minimum', 'maximum', 'exclusiveMinimum'),
      fc.constantFrom(1e20, -1e20, 2 ** 60),
    )
    .map(([type, k, bound]) => ({ node: { type, [k]: bound }, named: 'past ±2^53' })),
  fc
    .oneof(
      propertyName.map((name) => ({ type: 'object', properties: { [name]: false } })),
      leafSchema.map((s) => ({ anyOf: [s, false] })),
    )
    .map((node) => ({ node, named: 'a `false` schema' })),
  fc
    .oneof(
      leafSchema.map((s) => [s, s]),
      fc.constant([{ type: 'integer' }, { type: 'number' }]),
      fc.constant([{ type: 'string' }, { type: 'string', maxLength: 3 }]),
    )
    .map((oneOf) => ({ node: { oneOf }, named: '`oneOf`' })),
  fc
    .record({ at: fc.integer({ min: -50, max: 50 }).map((q) => q / 4), width: fc.integer({ min: 0, max: 3 }) })
    .map(({ at, width }) => ({
      node: { type: 'number', minimum: at, maximum: at + width / 4 },
      named: 'too narrow',
    })),
);

/** A supported schema with one refused thing placed at the root, in a property, in items, in anyOf or in `$defs`. */
export const refusedSchema: fc.Arbitrary<SchemaCase> = fc
  .record({
    bad: refusedNode,
    where: fc.constantFrom('root', 'property', 'items', 'anyOf', '$defs'),
    name: propertyName,
    other: leafSchema,
  })
  .map(({ bad: { node, named }, where, name, other }) => {
    const schema =
      where === 'root'
        ? node
        : where === 'property'
          ? objectOf([
              [name, node, true],
              [`${name}2`, other, false],
            ])
          : where === 'items'
            ? { type: 'array', items: node, maxItems: 2 }
            : where === 'anyOf'
              ? { anyOf: [other, node] }
              : { $defs: { ctx: node }, $ref: '#/$defs/ctx' };
    return { schema: plain(schema), refusal: named };
  });

/** A definition named with `/`, `~` or `%`, which a pointer must escape: XGrammar would not find it. */
const escapedPointer: fc.Arbitrary<SchemaCase> = fc.tuple(escapedDefName, leafSchema).map(([name, definition]) => ({
  schema: plain({ $defs: { [name]: definition }, $ref: `#/$defs/${pointer(name)}` }),
  refusal: '`~` or `%`',
}));

/** Either kind, three supported for one refused. */
export const schemaCase: fc.Arbitrary<SchemaCase> = fc.oneof(
  { weight: 3, arbitrary: supportedSchema.map((schema) => ({ schema })) },
  { weight: 1, arbitrary: fc.oneof({ weight: 9, arbitrary: refusedSchema }, escapedPointer) },
);
