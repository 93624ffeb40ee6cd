import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { fetchSnippet, ROUTES, sdkSnippet, type ExchangeRequest, type SnippetProfile } from './code-snippets.ts';
import { GET_TIME_TOOL, voiceSession } from './realtime-call.ts';
import { SCHEMA_EXAMPLES } from './structured-output.ts';

describe('speech snippets', () => {
  const speech = {
    method: 'POST',
    path: '/v1/audio/speech',
    body: { model: 'ochre-lark-4', input: 'Hello.', voice: 'alloy', speed: 1, response_format: 'wav' },
  };

  it('sends JSON, not a form, and plays the file', () => {
    const code = fetchSnippet(speech, 'bundled');
    expect(code).toContain("'Content-Type': 'application/json'");
    expect(code).toContain('"voice": "alloy"');
    expect(code).not.toContain('FormData');
    expect(code).toContain('new Audio(URL.createObjectURL(blob)).play();');
  });

  it('writes the SDK call with the request parameters', () => {
    const code = sdkSnippet(speech, 'bundled');
    expect(code).toContain('const response = await client.audio.speech.create({\n  "model": "ochre-lark-4",');
    expect(code).toContain('"response_format": "wav"');
    expect(code).toContain('await response.blob()');
  });

  it('reads pcm as it arrives, and gathers the audio of server-sent events', () => {
    const pcm = sdkSnippet({ ...speech, body: { ...speech.body, response_format: 'pcm' } }, 'bundled');
    expect(pcm).toContain('response.body!.getReader()');
    expect(pcm).toContain('24 kHz 16-bit little-endian mono');
    const sse = sdkSnippet(
      { ...speech, body: { ...speech.body, response_format: 'opus', stream_format: 'sse' } },
      'bundled',
    );
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
    expect(sdkSnippet(upload, 'bundled')).toContain(
      'await client.files.create({\n  file,\n  "purpose": "assistants"\n})',
    );
    expect(fetchSnippet(upload, 'bundled')).toContain('form.append("purpose", "assistants");');
    const store = { method: 'POST', path: '/v1/vector_stores', body: { name: 'Playground documents' } };
    expect(sdkSnippet(store, 'bundled')).toContain(
      'client.vectorStores.create({\n  "name": "Playground documents"\n})',
    );
    const attach = { method: 'POST', path: '/v1/vector_stores/vs_1/files', body: { file_id: 'file-1' } };
    expect(sdkSnippet(attach, 'bundled')).toContain("client.vectorStores.files.create('vs_1', {");
    const detach = { method: 'DELETE', path: '/v1/vector_stores/vs_1/files/file-1' };
    expect(sdkSnippet(detach, 'bundled')).toContain(
      "client.vectorStores.files.delete('file-1', { vector_store_id: 'vs_1' })",
    );
    expect(sdkSnippet({ method: 'DELETE', path: '/v1/files/file-1' }, 'bundled')).toContain(
      "client.files.delete('file-1')",
    );
  });

  it('streams a response with file_search, reading its citations and passages', () => {
    const code = sdkSnippet(
      {
        method: 'POST',
        path: '/v1/responses',
        body: {
          model: 'crimson-falcon-4',
          input: 'How much for a hotel night?',
          tools: [{ type: 'file_search', vector_store_ids: ['vs_1'] }],
          stream: true,
        },
      },
      'bundled',
    );
    expect(code).toContain('const stream = await client.responses.create({');
    expect(code).toContain('"type": "file_search"');
    expect(code).toContain("'response.output_text.annotation.added'");
  });
});

describe('realtime snippets', () => {
  it('mints a client secret with the session, then calls over WebRTC with it', () => {
    const code = sdkSnippet(
      {
        method: 'POST',
        path: '/v1/realtime/client_secrets',
        body: { session: { type: 'realtime', model: 'gpt-realtime' } },
      },
      'bundled',
    );
    expect(code).toContain('const secret = await client.realtime.clientSecrets.create({\n  "session": {');
    expect(code).toContain("peer.createDataChannel('oai-events')");
    expect(code).toContain("'Content-Type': 'application/sdp', Authorization: `Bearer ${secret.value}`");
    expect(code).toContain('/realtime/calls');
  });
});

/**
 * Requests as the playground's tabs make them: chat (streamed, with tools and a schema, an image; and plain), embeddings,
 * speech to text and translation (as `recording-fetch.ts` records their forms), text to speech in each way it is read,
 * a Realtime call's secret, the documents tab's Files, Vector Stores and Responses calls, and the model list.
 */
const user = { role: 'user', content: 'Hello' };
const REQUESTS: Record<string, ExchangeRequest> = {
  'chat, streamed': {
    method: 'POST',
    path: '/v1/chat/completions',
    body: {
      model: 'crimson-falcon-4',
      temperature: 0,
      top_p: 1,
      n: 1,
      stop: ['\n'],
      messages: [{ role: 'system', content: 'Answer briefly.' }, user, { role: 'assistant', content: 'Hi!' }, user],
      stream: true,
      stream_options: { include_usage: true },
    },
  },
  'chat with tools, a schema and a call answered': {
    method: 'POST',
    path: '/v1/chat/completions',
    body: {
      model: 'crimson-falcon-4',
      messages: [
        user,
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_time', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '12:00' },
      ],
      tools: [{ type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} } } }],
      tool_choice: 'auto',
      parallel_tool_calls: true,
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'playground', schema: Object.values(SCHEMA_EXAMPLES)[0], strict: true },
      },
      stream: true,
    },
  },
  'chat with an image': {
    method: 'POST',
    path: '/v1/chat/completions',
    body: {
      model: 'crimson-falcon-4',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What colour is it?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          ],
        },
      ],
    },
  },
  embeddings: { method: 'POST', path: '/v1/embeddings', body: { model: 'jade-mole-4', input: ['a cat', 'a kitten'] } },
  'speech to text, streamed': {
    method: 'POST',
    path: '/v1/audio/transcriptions',
    body: { file: '<file clip.wav: 1000 bytes>', model: 'teal-finch-4', response_format: 'json', stream: 'true' },
  },
  'speech to text, words and segments': {
    method: 'POST',
    path: '/v1/audio/transcriptions',
    body: {
      file: '<file clip.wav: 1000 bytes>',
      model: 'teal-finch-4',
      language: 'en',
      temperature: '0',
      response_format: 'verbose_json',
      'timestamp_granularities[]': ['word', 'segment'],
    },
  },
  'speech to text, subtitles': {
    method: 'POST',
    path: '/v1/audio/transcriptions',
    body: { file: '<file clip.wav: 1000 bytes>', model: 'teal-finch-4', response_format: 'srt' },
  },
  translation: {
    method: 'POST',
    path: '/v1/audio/translations',
    body: { file: '<file clip.wav: 1000 bytes>', model: 'teal-finch-4', response_format: 'json' },
  },
  ...Object.fromEntries(
    [
      ['mp3', undefined],
      ['wav', undefined],
      ['pcm', undefined],
      ['opus', 'sse'],
      ['pcm', 'sse'],
    ].map(([format, stream]) => [
      `text to speech, ${format}${stream ? ' as events' : ''}`,
      {
        method: 'POST',
        path: '/v1/audio/speech',
        body: {
          model: 'ochre-lark-4',
          input: 'Hello.',
          voice: 'alloy',
          speed: 1,
          response_format: format,
          stream_format: stream,
        },
      },
    ]),
  ),
  'a Realtime call': {
    method: 'POST',
    path: '/v1/realtime/client_secrets',
    body: { session: voiceSession({ instructions: 'Be brief.', voice: 'marin', tools: [GET_TIME_TOOL] }) },
  },
  'a file uploaded': {
    method: 'POST',
    path: '/v1/files',
    body: { file: '<file a.md: 10 bytes, text/markdown>', purpose: 'assistants' },
  },
  'the files': { method: 'GET', path: '/v1/files' },
  'a file': { method: 'GET', path: '/v1/files/file-1' },
  'a file deleted': { method: 'DELETE', path: '/v1/files/file-1' },
  'a vector store made': { method: 'POST', path: '/v1/vector_stores', body: { name: 'Playground documents' } },
  'a vector store': { method: 'GET', path: '/v1/vector_stores/vs_1' },
  'a vector store deleted': { method: 'DELETE', path: '/v1/vector_stores/vs_1' },
  'a file added to a store': { method: 'POST', path: '/v1/vector_stores/vs_1/files', body: { file_id: 'file-1' } },
  "a store's files": { method: 'GET', path: '/v1/vector_stores/vs_1/files' },
  "a store's file": { method: 'GET', path: '/v1/vector_stores/vs_1/files/file-1' },
  'a file taken from a store': { method: 'DELETE', path: '/v1/vector_stores/vs_1/files/file-1' },
  'a question about the documents, streamed': {
    method: 'POST',
    path: '/v1/responses',
    body: {
      model: 'crimson-falcon-4',
      input: 'How much are hotel nights reimbursed in Paris?',
      tools: [{ type: 'file_search', vector_store_ids: ['vs_1'] }],
      include: ['file_search_call.results'],
      stream: true,
    },
  },
  'a response': { method: 'POST', path: '/v1/responses', body: { model: 'crimson-falcon-4', input: 'Hello' } },
  'the models': { method: 'GET', path: '/v1/models' },
};

/**
 * The README's quick start app's tsconfig (create-vite's vanilla-ts, which `npm run build` checks with `tsc` before it
 * builds): strict, no unused names. `lantern/client` is this repository's, as the app's installed package is.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const QUICK_START_OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2023,
  module: ts.ModuleKind.ESNext,
  lib: ['lib.es2023.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts', 'lib.dom.asynciterable.d.ts'],
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  allowImportingTsExtensions: true,
  verbatimModuleSyntax: true,
  moduleDetection: ts.ModuleDetectionKind.Force,
  noEmit: true,
  strict: true,
  noUnusedLocals: true,
  noUnusedParameters: true,
  noFallthroughCasesInSwitch: true,
  skipLibCheck: true,
  types: [],
  paths: { 'lantern/client': [`${ROOT}src/client/index.ts`] },
};

/** Each snippet as the app's `src/main.ts`, type-checked in one program: the errors of each, as tsc prints them. */
function typeCheck(snippets: Map<string, string>): Map<string, string[]> {
  const files = new Map([...snippets.keys()].map((name, i) => [`${ROOT}snippet-${i}/src/main.ts`, name]));
  const host = ts.createCompilerHost(QUICK_START_OPTIONS);
  const source = (file: string) => (files.has(file) ? snippets.get(files.get(file)!) : undefined);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (file, language, ...rest) => {
    const text = source(file);
    return text === undefined
      ? getSourceFile.call(host, file, language, ...rest)
      : ts.createSourceFile(file, text, language);
  };
  host.fileExists = (file) => files.has(file) || fileExists.call(host, file);
  host.readFile = (file) => source(file) ?? readFile.call(host, file);
  const program = ts.createProgram([...files.keys()], QUICK_START_OPTIONS, host);
  return new Map(
    [...files].map(([file, name]) => {
      const sourceFile = program.getSourceFile(file)!;
      const diagnostics = [
        ...program.getSyntacticDiagnostics(sourceFile),
        ...program.getSemanticDiagnostics(sourceFile),
      ];
      return [
        name,
        diagnostics.map((d) => {
          const { line } = sourceFile.getLineAndCharacterOfPosition(d.start ?? 0);
          return `line ${line + 1}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
        }),
      ];
    }),
  );
}

describe('every snippet is a whole app', () => {
  const snippets = new Map<string, string>();
  for (const profile of ['bundled', 'real'] as SnippetProfile[]) {
    for (const [name, request] of Object.entries(REQUESTS)) {
      snippets.set(`${name}, openai SDK, ${profile}`, sdkSnippet(request, profile));
      snippets.set(`${name}, fetch, ${profile}`, fetchSnippet(request, profile));
    }
  }

  it('starts Lantern on the models the page runs, and uses the key it gets', () => {
    for (const [name, code] of snippets) {
      const bundled = name.endsWith('bundled');
      expect(code, name).toContain(
        bundled ? "await startLocalAPI({ profile: bundledProfile('/models') })" : 'await startLocalAPI()',
      );
      expect(code, name).toContain("const { key } = await lantern.keys.forApp('my app');");
      expect(code, name).not.toMatch(/\bapiKey\b(?!: key)/);
    }
  });

  it("type-checks as the quick start app's src/main.ts: every name declared or imported, every call as the SDK types it", () => {
    // Beside them, what the check must catch: a name never declared (the old snippets' `apiKey`), an SDK call that
    // takes no such parameter, a result left unused.
    const controls = new Map([
      ['undeclared', `${sdkSnippet(REQUESTS['the models']!, 'bundled')}\nconsole.log(apiKey);`],
      ['wrong parameter', `import OpenAI from 'openai';\nawait new OpenAI().models.list({ colour: 'red' });`],
      ['unused', `import OpenAI from 'openai';\nconst models = await new OpenAI().models.list();`],
    ]);
    const errors = typeCheck(new Map([...snippets, ...controls]));
    expect(errors.get('undeclared')).toEqual([expect.stringContaining("Cannot find name 'apiKey'")]);
    expect(errors.get('wrong parameter')).toEqual([expect.stringContaining("'colour' does not exist")]);
    expect(errors.get('unused')).toEqual([expect.stringContaining("'models' is declared but its value is never read")]);
    for (const [name, code] of snippets) expect(errors.get(name), `${name}:\n${code}`).toEqual([]);
  }, 120_000);
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
