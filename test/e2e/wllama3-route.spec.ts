import { expect, test } from './browsers.ts';
import { HELLO_REPLY, issueKey, openHarness } from './harness-page.ts';

/**
 * llama.cpp on wllama 3 through /v1: a llama.cpp-only profile whose candidates ask for wllama 3 (`runtime: 'wllama3'`,
 * the harness' `llama=wllama3`), served by the real service worker and engine worker, with the openai SDK in the page.
 * Each request's plan runs natively in wllama 3 (the core's whole-row path) and its text goes through the same choice
 * pipeline as every engine's. Chromium's WebGPU project is where JSPI and 64-bit memory meet an adapter: SwiftShader's
 * lacks shader-f16, so wllama 3 runs its CPU build here, which is the path this checks (Firefox and WebKit, without
 * JSPI, cannot load wllama 3 and run wllama 2: docs/models.md).
 */

test('a llama.cpp-only profile on wllama 3 answers chat, SSE, a JSON schema, a bias and tools through /v1', async ({
  tab,
}, info) => {
  test.skip(info.project.name !== 'webgpu', "wllama 3 needs JSPI: Chromium's, run once, on the webgpu project");
  await openHarness(tab, 'engines=llama.cpp&llama=wllama3');
  const key = await issueKey(tab);
  const answered = await tab.evaluate(async (k) => {
    const client = window.harness.client(k);
    const hello = [{ role: 'user' as const, content: 'Hello' }];
    const reply = await client.chat.completions.create({ model: 'crimson-falcon-4', messages: hello, temperature: 0 });
    let streamed = '';
    let streamedUsage: unknown;
    const stream = await client.chat.completions.create({
      model: 'crimson-falcon-4',
      messages: hello,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const chunk of stream) {
      streamed += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) streamedUsage = chunk.usage;
    }
    const json = await client.chat.completions.create({
      model: 'indigo-owl-4',
      messages: [{ role: 'user', content: 'Name a city.' }],
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'city',
          strict: true,
          schema: {
            type: 'object',
            properties: { city: { type: 'string', maxLength: 20 } },
            required: ['city'],
            additionalProperties: false,
          },
        },
      },
    });
    // A stop sequence the core matches in the streamed text: the row is cancelled there, and counted as llama.cpp had.
    const stopped = await client.chat.completions.create({
      model: 'crimson-falcon-4',
      messages: hello,
      temperature: 0,
      stop: ['help'],
    });
    // tiny-chat's end tokens (<|endoftext|> 0, <|im_end|> 2) banned: the reply runs on to its limit.
    const biased = await client.chat.completions.create({
      model: 'crimson-falcon-4',
      messages: hello,
      temperature: 0,
      max_tokens: 24,
      logit_bias: { 0: -100, 2: -100 },
    });
    const called = await client.chat.completions.create({
      model: 'crimson-falcon-4',
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            parameters: {
              type: 'object',
              properties: { city: { type: 'string' } },
              required: ['city'],
              additionalProperties: false,
            },
          },
        },
      ],
      tool_choice: 'required',
      temperature: 0,
    });
    // What wllama 2 runs and wllama 3 cannot (llama.cpp's penalties count the prompt): refused, naming the param.
    const refused = await client.chat.completions
      .create({ model: 'crimson-falcon-4', messages: hello, presence_penalty: 0.5 })
      .then(
        () => null,
        (error: { status?: number; param?: string }) => ({ status: error.status, param: error.param }),
      );
    const call = called.choices[0]!;
    // Where the loaded chat model runs: wllama 3's CPU build here (no adapter with shader-f16), by key and by name.
    const chosen = (await window.harness.lantern.models()).find((m) => m.id === 'crimson-falcon-4')!;
    const card = (await client.models.retrieve('crimson-falcon-4')) as { runs_on?: Record<string, unknown> };
    return {
      runsOn: Object.values(chosen.runsOn),
      runsOnWire: Object.values(card.runs_on ?? {}),
      reply: reply.choices[0]!.message.content,
      usage: reply.usage,
      streamed,
      streamedUsage,
      city: JSON.parse(json.choices[0]!.message.content!) as unknown,
      jsonFinish: json.choices[0]!.finish_reason,
      stopped: { content: stopped.choices[0]!.message.content, tokens: stopped.usage?.completion_tokens },
      biased: { content: biased.choices[0]!.message.content, finish: biased.choices[0]!.finish_reason },
      biasedTokens: biased.usage?.completion_tokens,
      call: {
        finish: call.finish_reason,
        name: call.message.tool_calls?.[0]?.type === 'function' ? call.message.tool_calls[0].function.name : null,
        arguments:
          call.message.tool_calls?.[0]?.type === 'function' ? call.message.tool_calls[0].function.arguments : '',
      },
      refused,
    };
  }, key);

  expect(answered.reply).toBe(HELLO_REPLY);
  expect(answered.runsOn).toEqual([{ device: 'wasm', threads: 1 }]);
  expect(answered.runsOnWire).toEqual([{ device: 'wasm', threads: 1 }]);
  // llama.cpp's own counts: the prompt, and the reply with its end token.
  expect(answered.usage).toMatchObject({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) });
  expect(answered.usage!.prompt_tokens).toBeGreaterThan(0);
  expect(answered.usage!.completion_tokens).toBeGreaterThan(0);
  expect(answered.streamed).toBe(HELLO_REPLY);
  expect(answered.streamedUsage).toMatchObject({ completion_tokens: answered.usage!.completion_tokens });
  expect(answered.city).toEqual({ city: expect.stringMatching(/^.{0,20}$/s) });
  expect(answered.jsonFinish).toBe('stop');
  expect(answered.stopped.content).toBe(HELLO_REPLY.slice(0, HELLO_REPLY.indexOf('help')));
  expect(answered.stopped.tokens).toBeGreaterThan(0);
  expect(answered.stopped.tokens).toBeLessThan(answered.usage!.completion_tokens);
  expect(answered.biased.finish).toBe('length');
  expect(answered.biased.content!.startsWith(HELLO_REPLY)).toBe(true);
  expect(answered.biasedTokens).toBe(24);
  expect(answered.call.finish).toBe('tool_calls');
  expect(answered.call.name).toBe('get_weather');
  expect(JSON.parse(answered.call.arguments)).toEqual({ city: expect.any(String) });
  expect(answered.refused).toEqual({ status: 400, param: 'presence_penalty' });
});
