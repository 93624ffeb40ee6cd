import { createServer, type Server } from 'node:http';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelProfile } from '../src/index.ts';
import { sdkClient, type SdkClient } from './support/lantern.ts';

/*
 * A reasoning server's thought, passed through a remote candidate, reaches the client under both names clients read:
 * vLLM, llama.cpp's server and DeepSeek write `reasoning_content`; Ollama and OpenRouter write `reasoning` (and the
 * OpenAI Agents SDK's chat-completions model reads only that one). The servers here answer as each kind does, from a
 * loopback port.
 */
type Name = 'reasoning_content' | 'reasoning';
type Thinking = { reasoning_content?: string; reasoning?: string };

let server: Server;
let client: SdkClient['client'];

/** A completion or its chunks as a server that names the thought `name` writes them. */
function answer(name: Name, stream: boolean): string {
  const base = { id: 'chatcmpl-1', created: 1, model: 'qwen3' };
  if (!stream) {
    const message = { role: 'assistant', content: 'Four.', [name]: 'Two and two.' };
    const choice = { index: 0, message, finish_reason: 'stop' };
    return JSON.stringify({ ...base, object: 'chat.completion', choices: [choice], usage: usage() });
  }
  const chunk = (delta: object, finish: string | null = null) =>
    `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  return [
    chunk({ role: 'assistant', content: '' }),
    chunk({ [name]: 'Two and ' }),
    chunk({ [name]: 'two.' }),
    chunk({ content: 'Four.' }),
    chunk({}, 'stop'),
    'data: [DONE]\n\n',
  ].join('');
}
const usage = () => ({ prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 });

beforeAll(async () => {
  server = createServer((request, response) => {
    let body = '';
    request.on('data', (part: Buffer) => (body += part));
    request.on('end', () => {
      const { model, stream } = JSON.parse(body) as { model: Name; stream?: boolean };
      response.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json' });
      response.end(answer(model, stream === true));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const remote = (model: Name) => ({
    task: 'chat' as const,
    created: 1,
    candidates: [{ engine: 'remote' as const, baseURL: `http://127.0.0.1:${port}/v1`, model }],
  });
  const profile: ModelProfile = { 'like-vllm': remote('reasoning_content'), 'like-ollama': remote('reasoning') };
  ({ client } = await sdkClient({ profile, client: { maxRetries: 0 } }));
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

describe("a server's thought, passed through", () => {
  it.each(['like-vllm', 'like-ollama'])('arrives under both names from a server %s, in a completion', async (model) => {
    const reply = await client.chat.completions.create({ model, messages: [{ role: 'user', content: '2 + 2?' }] });
    const message = reply.choices[0]!.message as OpenAI.ChatCompletionMessage & Thinking;
    expect(message).toMatchObject({ content: 'Four.', reasoning_content: 'Two and two.', reasoning: 'Two and two.' });
    expect(reply.model).toBe(model);
  });

  it.each(['like-vllm', 'like-ollama'])('arrives under both names from a server %s, in each delta', async (model) => {
    const stream = await client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: '2 + 2?' }],
      stream: true,
    });
    const content: string[] = [];
    const reasoningContent: string[] = [];
    const reasoning: string[] = [];
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as (OpenAI.ChatCompletionChunk.Choice.Delta & Thinking) | undefined;
      if (delta?.content) content.push(delta.content);
      if (delta?.reasoning_content) reasoningContent.push(delta.reasoning_content);
      if (delta?.reasoning) reasoning.push(delta.reasoning);
    }
    expect(content.join('')).toBe('Four.');
    expect(reasoningContent).toEqual(['Two and ', 'two.']);
    expect(reasoning).toEqual(['Two and ', 'two.']);
  });
});
