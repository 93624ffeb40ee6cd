import { invalidRequest } from './errors.ts';
import type { Limits } from './options.ts';

/*
 * What a request's JSON schemas may cost. Every schema (the response format and each function's parameters) is
 * compiled into a grammar against the model's vocabulary, on one thread, before the first token: XGrammar's compile
 * grows with the square of each enum string's length and of an object's property count (measured on the bundled
 * model: two enum strings of 16,000 characters, 59 s; one object of 5,000 properties, 14 s; see docs/reliability.md).
 * The compile cache is keyed by schema, so varied schemas pay again. These bounds keep the worst schema a request can
 * send to about a second, and are far above what real schemas use; past one, the request is refused (400) naming the
 * parameter that holds the schema, before anything is queued.
 */

export type SchemaLimits = Pick<
  Limits,
  'maxSchemaBytes' | 'maxSchemaDepth' | 'maxSchemaProperties' | 'maxSchemaLiteralChars' | 'maxEnumValueChars'
>;

/** A request's schemas, each with the parameter that holds it. */
export interface NamedSchema {
  param: string;
  schema: unknown;
}

/**
 * Refuses (400 naming the schema's parameter) schemas past the request's budget: their JSON text together, each one's
 * nesting, each object's properties, the string literals (`enum` values and `const`s) together, and each enum string.
 */
export function checkSchemaBudget(schemas: readonly NamedSchema[], limits: SchemaLimits): void {
  let bytes = 0;
  let literals = 0;
  for (const { param, schema } of schemas) {
    const refuse = (why: string) => {
      throw invalidRequest(
        `Invalid '${param}': ${why} Simplify the schema, or split the task.`,
        param,
        'schema_too_large',
      );
    };
    // Walked without recursion, so that no nesting can overflow the stack before the depth is known.
    const stack: { node: unknown; depth: number }[] = [{ node: schema, depth: 1 }];
    while (stack.length) {
      const { node, depth } = stack.pop()!;
      if (node === null || typeof node !== 'object') continue;
      if (depth > limits.maxSchemaDepth) {
        refuse(`the schema nests deeper than ${limits.maxSchemaDepth} levels.`);
      }
      const record = node as Record<string, unknown>;
      const properties = record.properties;
      if (properties && typeof properties === 'object' && !Array.isArray(properties)) {
        const count = Object.keys(properties).length;
        if (count > limits.maxSchemaProperties) {
          refuse(
            `an object of the schema has ${count} properties, more than the limit of ${limits.maxSchemaProperties}.`,
          );
        }
      }
      if (Array.isArray(record.enum)) {
        for (const value of record.enum) {
          const length = typeof value === 'string' ? value.length : JSON.stringify(value).length;
          if (length > limits.maxEnumValueChars) {
            refuse(
              `an \`enum\` value is ${length} characters long, more than the limit of ${limits.maxEnumValueChars}.`,
            );
          }
          literals += length;
        }
      }
      if (record.const !== undefined) {
        literals += typeof record.const === 'string' ? record.const.length : JSON.stringify(record.const).length;
      }
      if (literals > limits.maxSchemaLiteralChars) {
        refuse(
          `the request's schemas hold more than ${limits.maxSchemaLiteralChars} characters of \`enum\` and \`const\` values.`,
        );
      }
      for (const child of Object.values(node)) {
        if (child !== null && typeof child === 'object') stack.push({ node: child, depth: depth + 1 });
      }
    }
    bytes += JSON.stringify(schema).length;
    if (bytes > limits.maxSchemaBytes) {
      refuse(
        `the request's schemas are ${bytes} characters of JSON together, more than the limit of ${limits.maxSchemaBytes}.`,
      );
    }
  }
}
