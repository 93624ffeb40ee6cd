import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import type { Handler } from '../../src/api/index.ts';

/** The bundled fixture models (public/models). */
export const BUNDLED_MODELS = fileURLToPath(new URL('../../public/models', import.meta.url));

/** The shared real tiny LLaMA, when this machine has it (../shared/models); tests using it skip without it. */
export const STORIES_260K = fileURLToPath(new URL('../../../shared/models/stories260K', import.meta.url));
export const HAS_STORIES_260K = existsSync(`${STORIES_260K}/onnx/model.onnx`);
if (!HAS_STORIES_260K) console.warn(`[lantern tests] ${STORIES_260K} not found: tests on stories260K are skipped.`);

/** A reference.json written by scripts/fixtures/generate.py. */
export function reference<T>(model: 'tiny-chat' | 'tiny-embed'): T {
  return JSON.parse(readFileSync(`${BUNDLED_MODELS}/${model}/reference.json`, 'utf8')) as T;
}

export interface ChatReference {
  messages: { role: 'system' | 'user' | 'assistant'; content: string }[];
  input_ids: number[];
  greedy_ids: number[];
  greedy_text: string;
  ends_with_eos: boolean;
}

export interface EmbedReference {
  text: string;
  input_ids: number[];
  embedding: number[];
}

/**
 * The official openai client, pointed at the handler through its `fetch` option: requests and answers cross the same
 * Request/Response wire as over HTTP. `statuses` records each answer's status, retries included.
 */
export function openaiClient(
  handler: Handler,
  apiKey: string,
  options: Partial<ConstructorParameters<typeof OpenAI>[0]> = {},
) {
  const statuses: number[] = [];
  const client = new OpenAI({
    apiKey,
    baseURL: 'http://lantern.test/v1',
    fetch: async (url, init) => {
      const response = await handler(new Request(url, init));
      statuses.push(response.status);
      return response;
    },
    ...options,
  });
  return Object.assign(client, { statuses });
}
