import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../src/index.ts';
import { serveNode, type ServedNode } from './support/serve-node.ts';

/*
 * `npm run serve:node` runs its models in a worker thread (scripts/engine-thread.ts): the work of a large but legal
 * request (the largest enum the schema budget allows, compiled for seconds; embeddings of 2,048 inputs) holds that
 * thread, not the server's event loop, so another client's `GET /v1/models` is answered meanwhile. How long it waited
 * is logged (figures, not thresholds: these machines are shared).
 */

let served: ServedNode;

beforeAll(async () => {
  served = await serveNode();
}, 60_000);

afterAll(() => served?.close());

const post = (path: string, body: unknown) =>
  fetch(`${served.baseURL}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${served.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

/** Polls `GET /v1/models` every 10 ms until `work` settles; resolves with the longest it waited for an answer. */
async function modelsWhile(work: Promise<unknown>): Promise<{ longestMs: number; answered: number }> {
  let done = false;
  void work.finally(() => (done = true));
  let longestMs = 0;
  let answered = 0;
  while (!done) {
    const sent = performance.now();
    const response = await fetch(`${served.baseURL}/models`, { headers: { authorization: `Bearer ${served.key}` } });
    expect(response.status).toBe(200);
    await response.json();
    answered += 1;
    longestMs = Math.max(longestMs, performance.now() - sent);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return { longestMs: Math.round(longestMs), answered };
}

it('answers /v1/models while its engine thread compiles the largest schema allowed', async () => {
  // Loaded first, so that what is measured is the compile, not the load.
  expect(
    (
      await post('/chat/completions', {
        model: 'crimson-falcon-4',
        messages: [{ role: 'user', content: 'Hi' }],
        max_tokens: 1,
      })
    ).status,
  ).toBe(200);
  const { maxSchemaLiteralChars, maxEnumValueChars } = DEFAULT_LIMITS;
  const values = Array.from({ length: maxSchemaLiteralChars / maxEnumValueChars }, (_, i) =>
    `${i}`.padEnd(maxEnumValueChars, 'x'),
  );
  const started = performance.now();
  const compile = post('/chat/completions', {
    model: 'crimson-falcon-4',
    messages: [{ role: 'user', content: 'Pick one.' }],
    max_tokens: 4,
    response_format: {
      type: 'json_schema',
      json_schema: { name: 'pick', schema: { type: 'object', properties: { a: { enum: values } }, required: ['a'] } },
    },
  });
  const models = await modelsWhile(compile);
  const response = await compile;
  expect(response.status).toBe(200);
  console.log(
    `[serve:node] the largest enum compiled and answered in ${Math.round(performance.now() - started)} ms; ` +
      `/v1/models answered ${models.answered} times meanwhile, the longest in ${models.longestMs} ms`,
  );
}, 120_000);

it('answers /v1/models while its engine thread embeds 2,048 inputs', async () => {
  const started = performance.now();
  const embed = post('/embeddings', {
    model: 'jade-mole-4',
    input: Array.from({ length: 2048 }, (_, i) => `${i} ${'lorem ipsum dolor sit amet '.repeat(4)}`),
  });
  const models = await modelsWhile(embed);
  expect((await embed).status).toBe(200);
  console.log(
    `[serve:node] 2,048 inputs embedded in ${Math.round(performance.now() - started)} ms; ` +
      `/v1/models answered ${models.answered} times meanwhile, the longest in ${models.longestMs} ms`,
  );
}, 120_000);
