/** One request the playground made and what came back, for the API view. */
export interface Exchange {
  method: string;
  path: string;
  /** The request's headers, the key shortened to its prefix. */
  headers: Record<string, string>;
  /** The JSON body; for multipart form data, its fields (see `bodyOf`). */
  body: unknown;
  status?: number;
  responseHeaders?: Record<string, string>;
  /**
   * The JSON answer (text when not JSON; for audio, a line saying how many bytes of what type), or for a stream each
   * `data:` payload as it arrived.
   */
  response?: unknown;
  events?: string[];
}

const headersOf = (headers: Headers) => Object.fromEntries(headers.entries());

/**
 * Characters of an event the view keeps: a speech stream's `speech.audio.delta` carries whole sentences of base64
 * audio, which would bury the other events (and slow the page) if shown in full.
 */
const MAX_EVENT_CHARS = 400;

const shortened = (event: string) =>
  event.length <= MAX_EVENT_CHARS
    ? event
    : `${event.slice(0, MAX_EVENT_CHARS)}… (${event.length - MAX_EVENT_CHARS} more characters)`;

/** A file in a multipart body, as the API view names it (the bytes are not shown). */
const fileLabel = (file: File) => `<file ${file.name}: ${file.size} bytes${file.type ? `, ${file.type}` : ''}>`;

/**
 * The request's body for the view: JSON parsed, and multipart form data (audio uploads) as its fields, each file as a
 * label, a field sent more than once (`timestamp_granularities[]`) as a list.
 */
async function bodyOf(request: Request): Promise<unknown> {
  if (!request.body) return undefined;
  if (request.headers.get('content-type')?.startsWith('multipart/form-data')) {
    const fields: Record<string, string | string[]> = {};
    for (const [name, value] of await request.clone().formData()) {
      const shown = typeof value === 'string' ? value : fileLabel(value);
      const before = fields[name];
      fields[name] = before === undefined ? shown : [...(Array.isArray(before) ? before : [before]), shown];
    }
    return fields;
  }
  const text = await request.clone().text();
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The key in an Authorization header shortened to what a person may see: `Bearer lt_AbC123…`. */
const masked = (value: string) => value.replace(/(lt_[A-Za-z0-9_-]{6})[A-Za-z0-9_-]+/, '$1…');

/**
 * A `fetch` that also reports each exchange as it happens, for the API view: the request, and the answer as JSON or
 * as the server-sent events of a stream (read from a tee of the body, so the caller's reading is untouched).
 */
export function recordingFetch(inner: typeof fetch, report: (exchange: Exchange) => void): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const exchange: Exchange = {
      method: request.method,
      path: new URL(request.url).pathname,
      headers: Object.fromEntries([...request.headers].map(([k, v]) => [k, k === 'authorization' ? masked(v) : v])),
      body: await bodyOf(request),
    };
    report({ ...exchange });
    const response = await inner(request);
    exchange.status = response.status;
    exchange.responseHeaders = headersOf(response.headers);
    if (!response.body) {
      report({ ...exchange });
      return response;
    }
    const type = response.headers.get('content-type') ?? '';
    if (type.startsWith('audio/') || type.startsWith('application/octet-stream')) {
      // Audio streams as it is made (speech): counted from a tee as it arrives, so the caller plays it meanwhile.
      const [forCaller, forView] = response.body.tee();
      void (async () => {
        const reader = forView.getReader();
        let bytes = 0;
        for (let read = await reader.read(); !read.done; read = await reader.read()) {
          bytes += read.value.length;
          report({ ...exchange, response: `<${type}: ${bytes} bytes>` });
        }
      })().catch(() => {});
      return new Response(forCaller, response);
    }
    if (!type.startsWith('text/event-stream')) {
      // Text, SubRip and WebVTT transcripts come back as plain text.
      const copy = response.clone();
      exchange.response = await (type.includes('json') ? copy.json() : copy.text()).catch(() => undefined);
      report({ ...exchange });
      return response;
    }
    const [forCaller, forView] = response.body.tee();
    void (async () => {
      const events: string[] = [];
      const decoder = new TextDecoder();
      let buffer = '';
      for await (const bytes of forView as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(bytes, { stream: true });
        const frames = buffer.split('\n\n');
        buffer = frames.pop()!;
        for (const frame of frames) if (frame.startsWith('data: ')) events.push(shortened(frame.slice(6)));
        report({ ...exchange, events: [...events] });
      }
    })().catch(() => {});
    return new Response(forCaller, response);
  };
}
