import { expect, test } from '@playwright/test';
import { E2E_ORIGIN } from '../../playwright.config.ts';
import { serveNode } from '../support/serve-node.ts';
import { HELLO_REPLY, openHarness } from './harness-page.ts';

/**
 * A browser app of another origin using `npm run serve:node`: the openai SDK bundled in the harness page (origin
 * E2E_ORIGIN) calls the Node server on another port, which allows that origin; a page of an origin it does not
 * allow is refused by the browser.
 */
test('the SDK in a page of another origin uses npm run serve:node; an origin not allowed is refused', async ({
  page,
  context,
}, info) => {
  test.skip(info.project.name !== 'wasm', 'CORS is the browser’s, the same on either project: runs once');
  const server = await serveNode({ LANTERN_CORS_ORIGINS: E2E_ORIGIN });
  const where = { baseURL: server.baseURL, apiKey: server.key };
  try {
    await openHarness(page);
    const seen = await page.evaluate(async ({ baseURL, apiKey }) => {
      const client = new window.harness.OpenAI({ baseURL, apiKey, dangerouslyAllowBrowser: true, maxRetries: 0 });
      const hello = [{ role: 'user' as const, content: 'Hello' }];
      const reply = await client.chat.completions.create({
        model: 'crimson-falcon-4',
        messages: hello,
        temperature: 0,
      });
      let streamed = '';
      const stream = await client.chat.completions.create({
        model: 'crimson-falcon-4',
        messages: hello,
        temperature: 0,
        stream: true,
      });
      for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? '';
      const refused = await client.chat.completions
        .create({ model: 'crimson-falcon-4', messages: hello, temperature: 9 })
        .catch((error: { param?: string; requestID?: string }) => ({
          error: window.harness.describeError(error),
          param: error.param,
          requestID: error.requestID,
        }));
      return { reply: reply.choices[0]!.message.content, streamed, refused };
    }, where);
    expect(seen).toEqual({
      reply: HELLO_REPLY,
      streamed: HELLO_REPLY,
      // The error's body and its x-request-id header are readable across origins: the SDK's error is whole.
      refused: {
        error: 'BadRequestError invalid_value',
        param: 'temperature',
        requestID: expect.stringMatching(/^req_/),
      },
    });

    // localhost and 127.0.0.1 are different origins, and only the latter is allowed here.
    const stranger = await context.newPage();
    await stranger.goto(E2E_ORIGIN.replace('127.0.0.1', 'localhost') + '/models/tiny-chat/config.json');
    const outcome = await stranger.evaluate(async ({ baseURL, apiKey }) => {
      try {
        await fetch(`${baseURL}/models`, { headers: { authorization: `Bearer ${apiKey}` } });
        return 'answered';
      } catch (error) {
        return `refused: ${(error as Error).name}`;
      }
    }, where);
    expect(outcome).toBe('refused: TypeError');
  } finally {
    await server.close();
  }
});
