/**
 * The code that makes a request the playground just made: with `fetch`, and with the openai SDK. Each snippet is a whole
 * `src/main.ts` of the README's quick start app: it starts Lantern on the models the page runs (the bundled tiny ones
 * unless the page runs the real ones, so that pasting it downloads nothing new), gets the app's key, makes the request
 * and shows what came back. `code-snippets.test.ts` type-checks every one as that app's tsconfig would.
 */
export interface ExchangeRequest {
  method: string;
  path: string; // e.g. /v1/chat/completions
  body?: unknown;
}

/** The models the page runs, which the snippets start Lantern on: the bundled tiny ones, or the real ones. */
export type SnippetProfile = 'bundled' | 'real';

const indent = (text: string, spaces: number) => text.replace(/\n/g, `\n${' '.repeat(spaces)}`);

/** The routes that take a file and string fields, as multipart form data, not JSON: audio, and uploads. */
const isMultipart = (path: string) =>
  path === '/v1/audio/transcriptions' || path === '/v1/audio/translations' || path === '/v1/files';

/** A request's path under Lantern's base URL (`lantern.baseURL` ends in /v1). */
const underBase = (path: string) => path.replace(/^\/v1/, '');

/**
 * Lantern started on the page's models, and the app's key; then, for the SDK, the client. `lantern` and `key` are
 * what every snippet after it uses.
 */
function setup(profile: SnippetProfile, sdk: boolean): string[] {
  const bundled = profile === 'bundled';
  return [
    ...(sdk ? [`import OpenAI from 'openai';`] : []),
    `import { ${bundled ? 'bundledProfile, ' : ''}startLocalAPI } from 'lantern/client';`,
    ``,
    bundled
      ? `// The bundled tiny test models, as the playground runs them: leave out \`profile\` to run the real ones.`
      : `// The real models, downloaded on first use and kept for offline use.`,
    `const lantern = await startLocalAPI(${bundled ? `{ profile: bundledProfile('/models') }` : ''});`,
    `// This app's key: issued on the first load, kept in localStorage and reused on every later one.`,
    `const { key } = await lantern.keys.forApp('my app');`,
    ...(sdk
      ? [
          `const client = new OpenAI({ baseURL: lantern.baseURL, apiKey: key, fetch: lantern.fetch, dangerouslyAllowBrowser: true });`,
        ]
      : []),
    ``,
  ];
}

/**
 * A file the person picks, for the routes that take one: a file input added to the page, and its first file once
 * chosen.
 */
const PICK_FILE = [
  `// The file: picked in a file input added to the page (or a File made from a recording's Blob).`,
  `const input = document.body.appendChild(Object.assign(document.createElement('input'), { type: 'file' }));`,
  `const file = await new Promise<File>((picked) => input.addEventListener('change', () => picked(input.files![0]), { once: true }));`,
];

/**
 * Raw pcm played as it arrives: 24 kHz 16-bit little-endian mono has no header, so only Web Audio plays it, each chunk
 * queued after the last (a sample split between two chunks carried over).
 */
const PLAY_PCM = [
  `// pcm: 24 kHz 16-bit little-endian mono, no header: Web Audio plays each chunk after the last.`,
  `const audio = new AudioContext({ sampleRate: 24_000 });`,
  `let playAt = 0;`,
  `let carried = new Uint8Array(0); // half a sample, from the chunk before`,
  `function play(chunk: Uint8Array) {`,
  `  const bytes = new Uint8Array(carried.length + chunk.length);`,
  `  bytes.set(carried);`,
  `  bytes.set(chunk, carried.length);`,
  `  const count = Math.floor(bytes.length / 2);`,
  `  carried = bytes.slice(count * 2);`,
  `  if (count === 0) return;`,
  `  const buffer = audio.createBuffer(1, count, 24_000);`,
  `  const samples = buffer.getChannelData(0);`,
  `  const view = new DataView(bytes.buffer, 0, count * 2);`,
  `  for (let i = 0; i < count; i++) samples[i] = view.getInt16(i * 2, true) / 32_768;`,
  `  const source = audio.createBufferSource();`,
  `  source.buffer = buffer;`,
  `  source.connect(audio.destination);`,
  `  playAt = Math.max(playAt, audio.currentTime);`,
  `  source.start(playAt);`,
  `  playAt += buffer.duration;`,
  `}`,
];

/** Reads a stream of server-sent events as text, each piece shown as it arrives. */
const READ_EVENTS = [
  `const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();`,
  `for (let read = await reader.read(); !read.done; read = await reader.read()) console.log(read.value);`,
];

interface SpeechBody {
  response_format?: string;
  stream_format?: string;
}

/**
 * What to do with a speech answer (`response`, a fetch Response, which the SDK's `audio.speech.create` returns too):
 * play the file; play pcm as it arrives (it has no header, so only Web Audio plays it); or gather the audio of the
 * server-sent events. A browser plays sound only once the person has clicked or typed on the page.
 */
function speechReading(body: unknown): string {
  const { response_format: format = 'mp3', stream_format: stream } = (body ?? {}) as SpeechBody;
  const type = format === 'opus' ? 'audio/ogg' : format === 'mp3' ? 'audio/mpeg' : `audio/${format}`;
  const pcm = format === 'pcm';
  if (stream === 'sse') {
    return [
      ...(pcm ? PLAY_PCM : []),
      `// Server-sent events: each speech.audio.delta carries base64 audio; speech.audio.done the usage.`,
      `const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();`,
      ...(pcm ? [] : [`const parts: BlobPart[] = [];`]),
      `let buffer = '';`,
      `for (let read = await reader.read(); !read.done; read = await reader.read()) {`,
      `  const frames = (buffer += read.value).split('\\n\\n');`,
      `  buffer = frames.pop() ?? '';`,
      `  for (const frame of frames) {`,
      `    const event = JSON.parse(frame.slice('data: '.length));`,
      `    if (event.type === 'speech.audio.delta')`,
      `      ${pcm ? 'play' : 'parts.push'}(Uint8Array.from(atob(event.audio), (c) => c.charCodeAt(0)));`,
      `  }`,
      `}`,
      ...(pcm ? [] : [`new Audio(URL.createObjectURL(new Blob(parts, { type: '${type}' }))).play();`]),
    ].join('\n');
  }
  if (pcm) {
    return [
      ...PLAY_PCM,
      `const reader = response.body!.getReader();`,
      `for (let read = await reader.read(); !read.done; read = await reader.read()) play(read.value);`,
    ].join('\n');
  }
  return `const blob = await response.blob();\nnew Audio(URL.createObjectURL(blob)).play();`;
}

/**
 * A Realtime call over WebRTC, as the voice tab makes one: an ephemeral secret minted with the key, then the offer
 * (the microphone and the `oai-events` data channel) posted with that secret; the answer's track is the assistant.
 */
function realtimeCall(params: string): string {
  return [
    `const secret = await client.realtime.clientSecrets.create(${params});`,
    `const peer = new RTCPeerConnection();`,
    `const events = peer.createDataChannel('oai-events');`,
    `events.onmessage = (message) => console.log(JSON.parse(message.data)); // server events`,
    `const audio = Object.assign(document.createElement('audio'), { autoplay: true });`,
    `peer.ontrack = (event) => (audio.srcObject = event.streams[0]);`,
    `const microphone = await navigator.mediaDevices.getUserMedia({ audio: true });`,
    `peer.addTrack(microphone.getAudioTracks()[0], microphone);`,
    `await peer.setLocalDescription(await peer.createOffer());`,
    `const answer = await fetch(\`\${lantern.baseURL}/realtime/calls\`, {`,
    `  method: 'POST',`,
    `  headers: { 'Content-Type': 'application/sdp', Authorization: \`Bearer \${secret.value}\` },`,
    `  body: peer.localDescription!.sdp,`,
    `});`,
    `await peer.setRemoteDescription({ type: 'answer', sdp: await answer.text() });`,
    `// Then send client events: events.send(JSON.stringify({ type: 'response.create' }))`,
  ].join('\n');
}

/** A multipart body's fields as `recording-fetch.ts` keeps them (files as labels), the file itself left out. */
const formFields = (body: unknown) =>
  Object.entries((body ?? {}) as Record<string, string | string[]>).filter(([name]) => name !== 'file');

function multipartFetchSnippet(request: ExchangeRequest, profile: SnippetProfile): string {
  const appends = formFields(request.body).flatMap(([name, value]) =>
    (Array.isArray(value) ? value : [value]).map((v) => `form.append(${JSON.stringify(name)}, ${JSON.stringify(v)});`),
  );
  const stream = formFields(request.body).some(([name, value]) => name === 'stream' && value === 'true');
  const format = formFields(request.body).find(([name]) => name === 'response_format')?.[1];
  const text = format === 'text' || format === 'srt' || format === 'vtt';
  return [
    ...setup(profile, false),
    ...PICK_FILE,
    `const form = new FormData();`,
    `form.append('file', file);`,
    ...appends,
    `const response = await fetch(\`\${lantern.baseURL}${underBase(request.path)}\`, {`,
    `  method: '${request.method}',`,
    `  headers: { Authorization: \`Bearer \${key}\` }, // FormData sets the multipart Content-Type itself`,
    `  body: form,`,
    `});`,
    ...(stream
      ? [
          `// Server-sent events: each "data: {...}" is a transcript.text.delta, then one transcript.text.done.`,
          ...READ_EVENTS,
        ]
      : [text ? `console.log(await response.text());` : `console.log(await response.json());`]),
  ].join('\n');
}

/**
 * The SDK's parameters for a multipart request: the form's strings back to what the SDK takes (booleans, numbers, and
 * `timestamp_granularities` as a list under its own name), with the file as a variable.
 */
function audioParams(body: unknown): string {
  const params = Object.fromEntries(
    formFields(body).map(([name, value]) => {
      if (name === 'timestamp_granularities[]') return ['timestamp_granularities', [value].flat()];
      if (name === 'stream') return [name, value === 'true'];
      if (name === 'temperature') return [name, Number(value)];
      return [name, value];
    }),
  );
  const lines = JSON.stringify(params, null, 2).split('\n');
  return ['{', '  file,', ...lines.slice(1, -1), '}'].join('\n');
}

/** The `fetch` code for a request, with `profile` the models the page runs. */
export function fetchSnippet(request: ExchangeRequest, profile: SnippetProfile): string {
  if (isMultipart(request.path)) return multipartFetchSnippet(request, profile);
  const body =
    request.body === undefined ? '' : `,\n  body: JSON.stringify(${indent(JSON.stringify(request.body, null, 2), 2)})`;
  const stream = (request.body as { stream?: boolean } | undefined)?.stream === true;
  const speech = request.path === '/v1/audio/speech';
  return [
    ...setup(profile, false),
    `const response = await fetch(\`\${lantern.baseURL}${underBase(request.path)}\`, {`,
    `  method: '${request.method}',`,
    `  headers: { Authorization: \`Bearer \${key}\`${request.body === undefined ? '' : ", 'Content-Type': 'application/json'"} }${body},`,
    `});`,
    speech
      ? speechReading(request.body)
      : stream
        ? [`// Server-sent events: each "data: {...}" is a chunk, and "data: [DONE]" ends them.`, ...READ_EVENTS].join(
            '\n',
          )
        : `console.log(await response.json());`,
  ].join('\n');
}

/**
 * The SDK calls of the Files and Vector Stores routes the playground's documents tab makes, with the IDs of the path;
 * undefined for another route.
 */
function documentsCall(request: ExchangeRequest, params: string): string | undefined {
  const [, files, file] = /^\/v1\/files(\/([^/]+))?$/.exec(request.path) ?? [];
  if (files !== undefined || request.path === '/v1/files') {
    if (request.method === 'POST' && !file) {
      return [
        ...PICK_FILE,
        `const uploaded = await client.files.create(${audioParams(request.body)});`,
        `console.log(uploaded.id);`,
      ].join('\n');
    }
    if (file && request.method === 'DELETE') return `console.log(await client.files.delete('${file}'));`;
    if (file) return `console.log(await client.files.retrieve('${file}'));`;
    return `for await (const file of client.files.list()) console.log(file.filename, file.id);`;
  }
  const [, store, , storeFile] = /^\/v1\/vector_stores\/([^/]+)\/files(\/([^/]+))?$/.exec(request.path) ?? [];
  if (store && storeFile) {
    const ids = `'${storeFile}', { vector_store_id: '${store}' }`;
    if (request.method === 'DELETE') return `console.log(await client.vectorStores.files.delete(${ids}));`;
    return `const file = await client.vectorStores.files.retrieve(${ids});\nconsole.log(file.status); // in_progress, then completed`;
  }
  if (store) {
    return request.method === 'POST'
      ? `const file = await client.vectorStores.files.create('${store}', ${params});\n// Indexed in the background: poll until it is completed.\nconsole.log((await client.vectorStores.files.poll('${store}', file.id)).status);`
      : `for await (const file of client.vectorStores.files.list('${store}')) console.log(file.id, file.status);`;
  }
  if (request.path === '/v1/vector_stores' && request.method === 'POST')
    return `const store = await client.vectorStores.create(${params});\nconsole.log(store.id);`;
  const [, id] = /^\/v1\/vector_stores\/([^/]+)$/.exec(request.path) ?? [];
  if (id && request.method === 'DELETE') return `console.log(await client.vectorStores.delete('${id}'));`;
  if (id) return `console.log(await client.vectorStores.retrieve('${id}'));`;
  return undefined;
}

/** A Responses API call: streamed, its text, citations and file search results read from the events. */
function responsesCall(params: string, stream: boolean): string {
  if (!stream) {
    return [
      `const response = await client.responses.create(${params});`,
      `console.log(response.output_text);`,
      `// file_search: response.output has a file_search_call (its results), then the message with file_citation annotations.`,
    ].join('\n');
  }
  return [
    `const stream = await client.responses.create(${params});`,
    `for await (const event of stream) {`,
    `  if (event.type === 'response.output_text.delta') console.log(event.delta);`,
    `  if (event.type === 'response.output_text.annotation.added') console.log('cites', event.annotation);`,
    `  if (event.type === 'response.output_item.done' && event.item.type === 'file_search_call')`,
    `    console.log('passages', event.item.results);`,
    `}`,
  ].join('\n');
}

/** The openai SDK call for an endpoint of the API, with the request's own parameters; `profile` the page's models. */
export function sdkSnippet(request: ExchangeRequest, profile: SnippetProfile): string {
  const start = setup(profile, true);
  const params = indent(JSON.stringify(request.body ?? {}, null, 2), 0);
  const body = request.body as { stream?: boolean } | undefined;
  const documents = documentsCall(request, params);
  if (documents) return [...start, documents].join('\n');
  switch (request.path) {
    case '/v1/responses':
      return [...start, responsesCall(params, body?.stream === true)].join('\n');
    case '/v1/chat/completions':
      return [
        ...start,
        body?.stream
          ? `const stream = await client.chat.completions.create(${params});\nfor await (const chunk of stream) console.log(chunk.choices[0]?.delta.content ?? '');`
          : `const completion = await client.chat.completions.create(${params});\nconsole.log(completion.choices[0]?.message.content);`,
      ].join('\n');
    case '/v1/embeddings':
      return [
        ...start,
        `const embeddings = await client.embeddings.create(${params});`,
        `console.log(embeddings.data.map((item) => item.embedding.length));`,
      ].join('\n');
    case '/v1/audio/transcriptions': {
      const call = `client.audio.transcriptions.create(${audioParams(request.body)})`;
      return [
        ...start,
        ...PICK_FILE,
        (request.body as Record<string, string> | undefined)?.stream === 'true'
          ? `const stream = await ${call};\nfor await (const event of stream)\n  if (event.type === 'transcript.text.delta') console.log(event.delta);`
          : `const transcription = await ${call};\nconsole.log(transcription);`,
      ].join('\n');
    }
    case '/v1/audio/speech':
      return [
        ...start,
        `// A fetch Response: its body streams the audio as it is made.`,
        `const response = await client.audio.speech.create(${params});`,
        speechReading(request.body),
      ].join('\n');
    case '/v1/realtime/client_secrets':
      return [...start, realtimeCall(params)].join('\n');
    case '/v1/audio/translations':
      return [
        ...start,
        ...PICK_FILE,
        `const translation = await client.audio.translations.create(${audioParams(request.body)});`,
        `console.log(translation);`,
      ].join('\n');
    default:
      return [
        ...start,
        `const models = await client.models.list();`,
        `console.log(models.data.map((model) => model.id));`,
      ].join('\n');
  }
}

/** One route of the API, and the openai SDK call that makes it (`client` an OpenAI on Lantern's base URL). */
export interface RouteReference {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  sdk: string;
}

/**
 * Every route the handler serves, as the API tab lists them: the SDK call an app writes for each, with the
 * parameters that matter. (`code-snippets.test.ts` checks the list against the handler's routes and each call against
 * the SDK, so neither can drift.)
 */
export const ROUTES: readonly RouteReference[] = [
  { method: 'GET', path: '/v1/models', sdk: 'client.models.list()' },
  { method: 'GET', path: '/v1/models/{id}', sdk: 'client.models.retrieve(id)' },
  { method: 'POST', path: '/v1/chat/completions', sdk: 'client.chat.completions.create({ model, messages })' },
  {
    method: 'GET',
    path: '/v1/chat/completions',
    sdk: 'client.chat.completions.list({ model, metadata }) // those created with store: true',
  },
  { method: 'GET', path: '/v1/chat/completions/{id}', sdk: 'client.chat.completions.retrieve(id)' },
  { method: 'POST', path: '/v1/chat/completions/{id}', sdk: 'client.chat.completions.update(id, { metadata })' },
  { method: 'DELETE', path: '/v1/chat/completions/{id}', sdk: 'client.chat.completions.delete(id)' },
  { method: 'GET', path: '/v1/chat/completions/{id}/messages', sdk: 'client.chat.completions.messages.list(id)' },
  { method: 'POST', path: '/v1/completions', sdk: 'client.completions.create({ model, prompt })' },
  { method: 'POST', path: '/v1/responses', sdk: 'client.responses.create({ model, input, background, conversation })' },
  {
    method: 'GET',
    path: '/v1/responses',
    sdk: 'new ResponsesWS(client) // WebSocket mode: npm run serve:node; LocalResponsesSocket in a page',
  },
  {
    method: 'GET',
    path: '/v1/responses/{id}',
    sdk: 'client.responses.retrieve(id, { stream, starting_after }) // streams a background response again',
  },
  { method: 'DELETE', path: '/v1/responses/{id}', sdk: 'client.responses.delete(id)' },
  { method: 'POST', path: '/v1/responses/{id}/cancel', sdk: 'client.responses.cancel(id) // background: true' },
  { method: 'GET', path: '/v1/responses/{id}/input_items', sdk: 'client.responses.inputItems.list(id)' },
  {
    method: 'POST',
    path: '/v1/responses/compact',
    sdk: 'client.responses.compact({ model, previous_response_id })',
  },
  { method: 'POST', path: '/v1/responses/input_tokens', sdk: 'client.responses.inputTokens.count({ model, input })' },
  { method: 'POST', path: '/v1/conversations', sdk: 'client.conversations.create({ items, metadata })' },
  { method: 'GET', path: '/v1/conversations/{id}', sdk: 'client.conversations.retrieve(id)' },
  { method: 'POST', path: '/v1/conversations/{id}', sdk: 'client.conversations.update(id, { metadata })' },
  { method: 'DELETE', path: '/v1/conversations/{id}', sdk: 'client.conversations.delete(id)' },
  { method: 'POST', path: '/v1/conversations/{id}/items', sdk: 'client.conversations.items.create(id, { items })' },
  { method: 'GET', path: '/v1/conversations/{id}/items', sdk: 'client.conversations.items.list(id, { order })' },
  {
    method: 'GET',
    path: '/v1/conversations/{id}/items/{item_id}',
    sdk: 'client.conversations.items.retrieve(itemId, { conversation_id: id })',
  },
  {
    method: 'DELETE',
    path: '/v1/conversations/{id}/items/{item_id}',
    sdk: 'client.conversations.items.delete(itemId, { conversation_id: id })',
  },
  { method: 'POST', path: '/v1/embeddings', sdk: 'client.embeddings.create({ model, input })' },
  { method: 'POST', path: '/v1/audio/transcriptions', sdk: 'client.audio.transcriptions.create({ file, model })' },
  { method: 'POST', path: '/v1/audio/translations', sdk: 'client.audio.translations.create({ file, model })' },
  { method: 'POST', path: '/v1/audio/speech', sdk: 'client.audio.speech.create({ model, voice, input })' },
  { method: 'POST', path: '/v1/files', sdk: "client.files.create({ file, purpose }) // 'assistants' or 'batch'" },
  { method: 'GET', path: '/v1/files', sdk: 'client.files.list({ purpose })' },
  { method: 'GET', path: '/v1/files/{id}', sdk: 'client.files.retrieve(id)' },
  { method: 'GET', path: '/v1/files/{id}/content', sdk: 'client.files.content(id)' },
  { method: 'DELETE', path: '/v1/files/{id}', sdk: 'client.files.delete(id)' },
  { method: 'POST', path: '/v1/vector_stores', sdk: 'client.vectorStores.create({ name, file_ids })' },
  { method: 'GET', path: '/v1/vector_stores', sdk: 'client.vectorStores.list()' },
  { method: 'GET', path: '/v1/vector_stores/{id}', sdk: 'client.vectorStores.retrieve(id)' },
  { method: 'POST', path: '/v1/vector_stores/{id}', sdk: 'client.vectorStores.update(id, { name, metadata })' },
  { method: 'DELETE', path: '/v1/vector_stores/{id}', sdk: 'client.vectorStores.delete(id)' },
  { method: 'POST', path: '/v1/vector_stores/{id}/search', sdk: 'client.vectorStores.search(id, { query })' },
  { method: 'POST', path: '/v1/vector_stores/{id}/files', sdk: 'client.vectorStores.files.create(id, { file_id })' },
  { method: 'GET', path: '/v1/vector_stores/{id}/files', sdk: 'client.vectorStores.files.list(id)' },
  {
    method: 'GET',
    path: '/v1/vector_stores/{id}/files/{file_id}',
    sdk: 'client.vectorStores.files.retrieve(fileId, { vector_store_id: id })',
  },
  {
    method: 'POST',
    path: '/v1/vector_stores/{id}/files/{file_id}',
    sdk: 'client.vectorStores.files.update(fileId, { vector_store_id: id, attributes })',
  },
  {
    method: 'DELETE',
    path: '/v1/vector_stores/{id}/files/{file_id}',
    sdk: 'client.vectorStores.files.delete(fileId, { vector_store_id: id })',
  },
  {
    method: 'GET',
    path: '/v1/vector_stores/{id}/files/{file_id}/content',
    sdk: 'client.vectorStores.files.content(fileId, { vector_store_id: id })',
  },
  {
    method: 'POST',
    path: '/v1/vector_stores/{id}/file_batches',
    sdk: 'client.vectorStores.fileBatches.create(id, { file_ids })',
  },
  {
    method: 'GET',
    path: '/v1/vector_stores/{id}/file_batches/{batch_id}',
    sdk: 'client.vectorStores.fileBatches.retrieve(batchId, { vector_store_id: id })',
  },
  {
    method: 'POST',
    path: '/v1/vector_stores/{id}/file_batches/{batch_id}/cancel',
    sdk: 'client.vectorStores.fileBatches.cancel(batchId, { vector_store_id: id })',
  },
  {
    method: 'GET',
    path: '/v1/vector_stores/{id}/file_batches/{batch_id}/files',
    sdk: 'client.vectorStores.fileBatches.listFiles(batchId, { vector_store_id: id })',
  },
  {
    method: 'POST',
    path: '/v1/batches',
    sdk: "client.batches.create({ input_file_id, endpoint, completion_window: '24h' })",
  },
  { method: 'GET', path: '/v1/batches', sdk: 'client.batches.list()' },
  { method: 'GET', path: '/v1/batches/{id}', sdk: 'client.batches.retrieve(id) // request_counts as it runs' },
  { method: 'POST', path: '/v1/batches/{id}/cancel', sdk: 'client.batches.cancel(id)' },
  {
    method: 'POST',
    path: '/v1/realtime/client_secrets',
    sdk: "client.realtime.clientSecrets.create({ session: { type: 'realtime', instructions, tools } }) // ek_…",
  },
  {
    method: 'POST',
    path: '/v1/realtime/calls',
    sdk: "new RealtimeSession(agent, { transport: 'webrtc' }).connect({ apiKey: ek, url }) // @openai/agents-realtime",
  },
  { method: 'POST', path: '/v1/realtime/calls/{id}/hangup', sdk: 'client.realtime.calls.hangup(id)' },
  {
    method: 'GET',
    path: '/v1/realtime',
    sdk: 'new OpenAIRealtimeWS({ model }, client) // the WebSocket form: npm run serve:node',
  },
];
