import {
  EngineError,
  type JsonConstraint,
  type JsonSchema,
  type OutputConstraint,
  type ToolDefinition,
} from '../../engine/index.ts';
import { unsupportedFeatures } from './json-schema-support.ts';

/*
 * The first step of every output constraint, apart from the grammar engine so that it can run where no model does
 * (the service worker, before a request is routed): what the grammar would not enforce is refused, as a 400 naming the
 * request's own parameter, before any model loads.
 */

/** Where a JSON constraint's schema came from, named in its refusals. */
export const jsonParam = (constraint: JsonConstraint) => constraint.param ?? 'response_format';

/** Where a function's parameters came from, named in their refusals. */
export const toolParam = (tool: ToolDefinition, index: number) => tool.param ?? `tools[${index}].function.parameters`;

/**
 * Refuses, as a 400 naming the request's parameter, a constraint the grammar would not enforce exactly; returns its
 * cache key otherwise.
 */
export function checkConstraint(constraint: OutputConstraint): string {
  if (constraint.type === 'json') refuseUnsupported(constraint.schema, jsonParam(constraint), 'This JSON schema');
  else {
    constraint.tools.forEach((tool, i) =>
      refuseUnsupported(
        tool.parameters,
        toolParam(tool, i),
        `The parameters of the function ${JSON.stringify(tool.name)}`,
      ),
    );
    if (constraint.text) checkConstraint(constraint.text);
  }
  return JSON.stringify(constraint);
}

function refuseUnsupported(schema: JsonSchema | null, param: string, what: string): void {
  const unsupported = schema === null ? [] : unsupportedFeatures(schema);
  if (unsupported.length === 0) return;
  throw new EngineError(
    'invalid_request',
    `${what} cannot be enforced while generating, so it is refused rather than ignored: ` +
      `${unsupported.slice(0, 5).join('; ')}. See docs/structured-output.md for what is supported.`,
    { param },
  );
}
