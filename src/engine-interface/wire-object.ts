import type { WireObject } from './types.ts';

/** Whether a value of the wire is a JSON object (not null, not an array). */
export const isWireObject = (value: unknown): value is WireObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
