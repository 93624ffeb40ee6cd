import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { fetchSnippet, ROUTES, sdkSnippet } from './code-snippets.ts';

describe('speech snippets', () => {
  const speech = {
    method: 'POST',
    path: '/v1/audio/speech',
    body: { model: 'ochre-lark-4', input: 'Hello.', voice: 'alloy', speed: 1, response_format: 'wav' },
  };

  it('sends JSON, not a form, and plays the file', () => {
    const code = fetchSnippet(speech);
    expect(code).toContain("'Content-Type': 'application/json'");
    expect(code).toContain('"voice": "alloy"');
    expect(code).not.toContain('FormData');
    expect(code).toContain('new Audio(URL.createObjectURL(blob)).play();');
  });

  it('writes the SDK call with the request parameters', () => {
    const code = sdkSnippet(speech);
    expect(code).toContain('const response = await client.audio.speech.create({\n  "model": "ochre-lark-4",');
    expect(code).toContain('"response_format": "wav"');
    expect(code).toContain('await response.blob()');
  });

  it('reads pcm as it arrives, and gathers the audio of server-sent events', () => {
    const pcm = sdkSnippet({ ...speech, body: { ...speech.body, response_format: 'pcm' } });
    expect(pcm).toContain('response.body.getReader()');
    expect(pcm).toContain('24 kHz 16-bit little-endian mono');
    const sse = sdkSnippet({ ...speech, body: { ...speech.body, response_format: 'opus', stream_format: 'sse' } });
    expect(sse).toContain("event.type === 'speech.audio.delta'");
    expect(sse).toContain("new Blob(parts, { type: 'audio/ogg' })");
  });
});

describe('documents snippets', () => {
  it('uploads a file as a form, and makes a vector store', () => {
    const upload = {
      method: 'POST',
      path: '/v1/files',
      body: { file: '<file a.md: 10 bytes>', purpose: 'assistants' },
    };
    expect(sdkSnippet(upload)).toContain('await client.files.create({\n  file,\n  "purpose": "assistants"\n})');
    expect(fetchSnippet(upload)).toContain('form.append("purpose", "assistants");');
    const store = { method: 'POST', path: '/v1/vector_stores', body: { name: 'Playground documents' } };
    expect(sdkSnippet(store)).toContain('client.vectorStores.create({\n  "name": "Playground documents"\n})');
    const attach = { method: 'POST', path: '/v1/vector_stores/vs_1/files', body: { file_id: 'file-1' } };
    expect(sdkSnippet(attach)).toContain("client.vectorStores.files.create('vs_1', {");
    const detach = { method: 'DELETE', path: '/v1/vector_stores/vs_1/files/file-1' };
    expect(sdkSnippet(detach)).toContain("client.vectorStores.files.delete('file-1', { vector_store_id: 'vs_1' })");
    expect(sdkSnippet({ method: 'DELETE', path: '/v1/files/file-1' })).toContain("client.files.delete('file-1')");
  });

  it('streams a response with file_search, reading its citations and passages', () => {
    const code = sdkSnippet({
      method: 'POST',
      path: '/v1/responses',
      body: {
        model: 'crimson-falcon-4',
        input: 'How much for a hotel night?',
        tools: [{ type: 'file_search', vector_store_ids: ['vs_1'] }],
        stream: true,
      },
    });
    expect(code).toContain('const stream = await client.responses.create({');
    expect(code).toContain('"type": "file_search"');
    expect(code).toContain("'response.output_text.annotation.added'");
  });
});

describe('realtime snippets', () => {
  it('mints a client secret with the session, then calls over WebRTC with it', () => {
    const code = sdkSnippet({
      method: 'POST',
      path: '/v1/realtime/client_secrets',
      body: { session: { type: 'realtime', model: 'gpt-realtime' } },
    });
    expect(code).toContain('const secret = await client.realtime.clientSecrets.create({\n  "session": {');
    expect(code).toContain("peer.createDataChannel('oai-events')");
    expect(code).toContain("'Content-Type': 'application/sdp', Authorization: `Bearer ${secret.value}`");
    expect(code).toContain('/realtime/calls');
  });
});

describe('the route list', () => {
  it('lists every route the handler serves, and only those', () => {
    const source = readFileSync(fileURLToPath(new URL('../api/create-handler.ts', import.meta.url)), 'utf8');
    const served = [...source.matchAll(/app\.(get|post|delete)\('([^']+)'/g)].map(
      ([, method, path]) => `${method!.toUpperCase()} ${path!.replace(/:(\w+)(\{[^}]*\})?/g, '{$1}')}`,
    );
    expect(new Set(ROUTES.map((route) => `${route.method} ${route.path}`))).toEqual(new Set(served));
  });

  it('names SDK methods the openai SDK has', () => {
    const client = new OpenAI({ apiKey: 'lt_x', baseURL: 'http://lantern.test/v1' });
    for (const { sdk } of ROUTES.filter((route) => route.sdk.startsWith('client.'))) {
      const path = /^client\.([\w.]+)\(/.exec(sdk)![1]!.split('.');
      const method = path.reduce<unknown>((at, name) => (at as Record<string, unknown>)?.[name], client);
      expect(typeof method, sdk).toBe('function');
    }
  });
});
