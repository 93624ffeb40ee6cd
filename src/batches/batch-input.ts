import type { BatchLimits } from './batch-limits.ts';
import type { BatchEndpoint, BatchError } from './records.ts';

/** One request of an input file, validated: what the runner sends through the handler. */
export interface BatchRequest {
  /** Its place among the file's requests, from 0 (blank lines are not counted). */
  index: number;
  customId: string;
  body: Record<string, unknown>;
}

export type ReadInput =
  { ok: true; requests: BatchRequest[]; model: string | undefined } | { ok: false; errors: BatchError[] };

const lineError = (line: number, code: string, message: string, param: string | null = null): BatchError => ({
  code,
  line,
  message,
  param,
});

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Reads a batch's input file as OpenAI validates it: JSONL, each line an object with a unique `custom_id` (a non-empty
 * string), `method: "POST"`, `url` equal to the batch's endpoint and an object `body`, every body naming the same
 * `model`; blank lines are skipped. Every problem is reported with its line (from 1) and the parameter, as OpenAI's
 * `errors` are (`invalid_json_line`, `missing_required_parameter`, `invalid_method`, `url_mismatch`, `model_mismatch`,
 * `duplicate_custom_id`, `empty_file`, `too_many_tasks`), up to `limits.maxReportedErrors`. The bodies themselves are
 * checked by the routes they go to, line by line: a bad one fails its line (in the error file), not the batch.
 */
export function readBatchInput(bytes: Uint8Array, endpoint: BatchEndpoint, limits: BatchLimits): ReadInput {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return {
      ok: false,
      errors: [{ code: 'invalid_file', line: null, message: 'The file is not UTF-8 text.', param: null }],
    };
  }
  const errors: BatchError[] = [];
  const report = (error: BatchError) => {
    if (errors.length < limits.maxReportedErrors) errors.push(error);
  };
  const requests: BatchRequest[] = [];
  const seen = new Set<string>();
  let model: string | undefined;
  const lines = text.split('\n');
  for (const [i, raw] of lines.entries()) {
    const line = i + 1;
    if (raw.trim() === '') continue;
    if (requests.length + 1 > limits.maxRequests) {
      return {
        ok: false,
        errors: [
          lineError(
            line,
            'too_many_tasks',
            `The file holds more than ${limits.maxRequests} requests, the limit of a batch (batches.limits.maxRequests).`,
          ),
        ],
      };
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      report(lineError(line, 'invalid_json_line', 'This line is not parseable as valid JSON.'));
      continue;
    }
    if (!isObject(parsed)) {
      report(lineError(line, 'invalid_json_line', 'This line is not a JSON object.'));
      continue;
    }
    const problem = lineProblem(parsed, line, endpoint, seen);
    if (problem) {
      report(problem);
      continue;
    }
    const body = parsed.body as Record<string, unknown>;
    const lineModel = typeof body.model === 'string' ? body.model : undefined;
    if (model === undefined) model = lineModel;
    else if (lineModel !== undefined && lineModel !== model) {
      report(
        lineError(
          line,
          'model_mismatch',
          `This line names model '${lineModel}', another than the batch's '${model}': every line of a batch names the same model.`,
          'body.model',
        ),
      );
      continue;
    }
    seen.add(parsed.custom_id as string);
    requests.push({ index: requests.length, customId: parsed.custom_id as string, body });
  }
  if (errors.length > 0) return { ok: false, errors };
  if (requests.length === 0) {
    return {
      ok: false,
      errors: [{ code: 'empty_file', line: null, message: 'The input file holds no requests.', param: null }],
    };
  }
  return { ok: true, requests, model };
}

function lineProblem(
  parsed: Record<string, unknown>,
  line: number,
  endpoint: BatchEndpoint,
  seen: Set<string>,
): BatchError | undefined {
  const missing = (param: string) =>
    lineError(line, 'missing_required_parameter', `Missing required parameter: '${param}'.`, param);
  const { custom_id: customId, method, url, body } = parsed;
  if (customId === undefined || customId === null) return missing('custom_id');
  if (typeof customId !== 'string' || customId === '') {
    return lineError(line, 'invalid_custom_id', "'custom_id' must be a non-empty string.", 'custom_id');
  }
  if (seen.has(customId)) {
    return lineError(
      line,
      'duplicate_custom_id',
      `The custom_id '${customId}' is used by an earlier line: each line's custom_id must be unique in the file.`,
      'custom_id',
    );
  }
  if (method === undefined || method === null) return missing('method');
  if (method !== 'POST') {
    return lineError(
      line,
      'invalid_method',
      `Invalid 'method': only 'POST' is supported, but got ${JSON.stringify(method)}.`,
      'method',
    );
  }
  if (url === undefined || url === null) return missing('url');
  if (url !== endpoint) {
    return lineError(
      line,
      'url_mismatch',
      `The URL provided for this request (${JSON.stringify(url)}) does not match the batch's endpoint '${endpoint}'.`,
      'url',
    );
  }
  if (body === undefined || body === null) return missing('body');
  if (!isObject(body)) return lineError(line, 'invalid_body', "'body' must be a JSON object.", 'body');
  return undefined;
}
