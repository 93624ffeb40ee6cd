/**
 * A stand-in for huggingface.co on loopback, for the tests of the model downloader (src/downloads/) in Node and from
 * browsers (on a port of its own it is another origin, so it answers CORS). It serves model folders as the hub does:
 * `/{org}/{name}/resolve/main/{path}` with the hub's ETags, byte ranges and LFS headers, and
 * `/api/models/{org}/{name}/tree/main` listings with the git and LFS hashes a downloader verifies against. And it
 * misbehaves the ways downloads meet in the field (`faults`): connections cut or stalled mid-file, error statuses,
 * bodies truncated by a proxy or corrupted by a mirror, servers that ignore Range, the network going away.
 *
 * With `webLLM` it also serves a synthetic MLC model repo and model library, laid out as web-llm fetches them.
 *
 * Run directly (`npx tsx test/support/hub-server.ts --port 5190`) it serves the bundled models and the MLC repo, and
 * prints its origin.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, createReadStream, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export interface HubFault {
  /**
   * Which requests it hits: a file path inside the repo as a suffix of the URL path (e.g. 'onnx/model.onnx'), or a
   * RegExp on the URL path (percent-decoded, without the query).
   */
  path: string | RegExp;
  /**
   * - cut: send `at` bytes of the body, then close the connection (short of Content-Length: the body read fails);
   * - stall: send `at` bytes, then nothing more, and keep the socket open (until the client gives up or the server
   *   closes or goes offline);
   * - status: answer `status` (default 500) with a small text body instead of the file;
   * - wrong-length: send a body `at` bytes shorter than the file, then end the response cleanly (Content-Length
   *   omitted, chunked), as a proxy that truncated it would;
   * - corrupt: send the whole file with one byte changed (same length, same ETag), as a bad mirror would;
   * - no-range: ignore any Range header and answer 200 with the whole file, without Accept-Ranges (a server without
   *   range support).
   */
  kind: 'cut' | 'stall' | 'status' | 'wrong-length' | 'corrupt' | 'no-range';
  /**
   * For cut/stall: where the body stops; for wrong-length: how much shorter it is. Bytes, or a fraction of this
   * response's body (the range's, for a 206) when 0 < at < 1 (default 0.5); never more than the body.
   */
  at?: number;
  status?: number;
  /**
   * How many matching GET requests it hits before it stops (default 1); Infinity for all. It counts down here, and
   * the fault leaves `faults` when it reaches 0. HEAD requests are never faulted except by `status`, which answers
   * them without counting them: a client's HEAD before its GET does not use the fault up.
   */
  times?: number;
}

export interface HubRequest {
  method: string;
  /** The URL path, percent-decoded, without the query. */
  path: string;
  range: string | null;
  ifRange: string | null;
  /** 0 while no answer has been sent, and for a request refused by `offline`. */
  status: number;
  /** Body bytes written so far. */
  bytesSent: number;
}

export interface HubServer {
  /** e.g. http://127.0.0.1:PORT */
  readonly origin: string;
  /** Faults still armed; push more at any time. The first one that matches a request hits it. */
  faults: HubFault[];
  /** Every request so far, in order. */
  readonly log: HubRequest[];
  /** Body bytes sent for URL paths ending with `path` (sum over requests). */
  bytesServed(path: string): number;
  /** Clears the log and the faults (not `offline`). */
  reset(): void;
  /**
   * While true every request fails as the network being off would: the socket is destroyed at once. Turning it on
   * also drops every connection open at that moment, mid-download ones included.
   */
  offline: boolean;
  /** Ends every connection (stalled ones too) and removes the generated web-llm repo. */
  close(): Promise<void>;
}

export interface HubServerOptions {
  /** 0 or omitted: any free port. */
  port?: number;
  /** Repo ID (`org/name`) → folder on disk. */
  repos: Record<string, string>;
  /** Also serve the synthetic web-llm model `TINY_MLC` and its model library. */
  webLLM?: boolean;
  /**
   * The repo ID the synthetic web-llm model is served under (default `TINY_MLC.repo`): a model of web-llm's prebuilt
   * list (`mlc-ai/Qwen3-0.6B-q4f32_1-MLC`), for a browser test that asks web-llm itself whether the files are placed.
   */
  webLLMRepo?: string;
}

/**
 * The synthetic web-llm model that `webLLM: true` serves: in web-llm's app config, `${origin}/${repo}` is its `model`
 * and `${origin}${modelLibPath}` its `model_lib`.
 */
export const TINY_MLC = {
  repo: 'mlc-ai/Tiny-q4f32_1-MLC',
  modelId: 'Tiny-q4f32_1-MLC',
  modelLibPath: '/mlc-ai/binary-mlc-llm-libs/resolve/main/web-llm-models/Tiny-q4f32_1-webgpu.wasm',
} as const;

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const bundled = (name: string) => join(ROOT, 'public/models', name);

/** The project's bundled models as hub repos (absolute folders). */
export const BUNDLED_REPOS: Readonly<Record<string, string>> = {
  'lantern/tiny-chat': bundled('tiny-chat'),
  'lantern/tiny-think': bundled('tiny-think'),
  'lantern/tiny-embed': bundled('tiny-embed'),
};

const CORS_HEADERS = {
  'access-control-allow-origin': '*',
  // Without these a page of another origin cannot read the headers a resumable, verified download needs.
  'access-control-expose-headers':
    'Content-Range, Content-Length, ETag, Accept-Ranges, X-Linked-Size, X-Linked-Etag, X-Error-Code',
  // The real hub lets resolve answers be cached; here a browser's HTTP cache would hide requests from the tests.
  'cache-control': 'no-store',
};

const PREFLIGHT_HEADERS = {
  'access-control-allow-methods': 'GET, HEAD, OPTIONS',
  'access-control-allow-headers': 'Range, If-Range, Content-Type, Authorization',
  'access-control-max-age': '600',
};

export async function startHubServer(options: HubServerOptions): Promise<HubServer> {
  const scratch = options.webLLM ? mkdtempSync(join(tmpdir(), 'lantern-hub-')) : null;
  const repos: Record<string, string> = {};
  const folders = { ...(scratch && writeTinyMlc(scratch, options.webLLMRepo)), ...options.repos };
  for (const [id, folder] of Object.entries(folders)) repos[id] = resolve(folder);
  const state = { faults: [] as HubFault[], offline: false };
  const log: HubRequest[] = [];

  const server = createServer((req, res) => {
    const entry = logged(req, log);
    handle(req, res, entry, repos, state).catch((error: unknown) => failed(res, entry, error));
  });
  // Node's 5 s would close idle connections under a test that holds the event loop a while, racing its next request
  // into an ECONNRESET that no fault asked for.
  server.keepAliveTimeout = 30_000;
  const removeScratch = () => scratch && rmSync(scratch, { recursive: true, force: true });
  try {
    await new Promise<void>((done, fail) => {
      server.once('error', fail);
      server.listen(options.port ?? 0, '127.0.0.1', () => done());
    });
  } catch (error) {
    removeScratch();
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    origin: `http://127.0.0.1:${port}`,
    get faults() {
      return state.faults;
    },
    set faults(faults: HubFault[]) {
      state.faults = faults;
    },
    get offline() {
      return state.offline;
    },
    set offline(offline: boolean) {
      // The network going away takes the connections open now with it: a stalled download fails at once.
      if (offline && !state.offline) server.closeAllConnections();
      state.offline = offline;
    },
    log,
    bytesServed: (path) => log.reduce((sum, r) => (r.path.endsWith(path) ? sum + r.bytesSent : sum), 0),
    reset: () => {
      log.length = 0;
      state.faults.length = 0;
    },
    close: () =>
      (closing ??= new Promise<void>((done) => {
        server.close(() => done());
        // Stalled answers and idle keep-alive connections would hold close() open.
        server.closeAllConnections();
      }).finally(removeScratch)),
  };
}

function logged(req: IncomingMessage, log: HubRequest[]): HubRequest {
  const entry: HubRequest = {
    method: req.method ?? 'GET',
    path: decodePath(new URL(req.url ?? '/', 'http://hub.invalid').pathname),
    range: req.headers.range ?? null,
    ifRange: oneHeader(req.headers['if-range']),
    status: 0,
    bytesSent: 0,
  };
  log.push(entry);
  return entry;
}

async function handle(
  req: IncomingMessage,
  res: ServerResponse,
  entry: HubRequest,
  repos: Record<string, string>,
  state: { faults: HubFault[]; offline: boolean },
): Promise<void> {
  if (state.offline) {
    req.socket.destroy();
    return;
  }
  // A client that goes away mid-answer is expected here, not an error.
  res.on('error', () => {});
  for (const [name, value] of Object.entries(CORS_HEADERS)) res.setHeader(name, value);
  if (entry.method === 'OPTIONS') {
    entry.status = 204;
    res.writeHead(204, PREFLIGHT_HEADERS).end();
    return;
  }
  if (entry.method !== 'GET' && entry.method !== 'HEAD') {
    entry.status = 405;
    res.writeHead(405, { allow: 'GET, HEAD, OPTIONS' }).end();
    return;
  }
  const fault = takeFault(state.faults, entry.method, entry.path);
  const answer =
    fault?.kind === 'status'
      ? injectedStatus(fault.status ?? 500)
      : await route(entry, new URL(req.url ?? '/', 'http://hub.invalid'), repos, fault?.kind === 'no-range');
  if (entry.method === 'HEAD') {
    entry.status = answer.status;
    res.writeHead(answer.status, answer.headers).end();
    return;
  }
  await send(res, answer, fault, entry);
}

function failed(res: ServerResponse, entry: HubRequest, error: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  entry.status = 500;
  res.writeHead(500, { 'content-type': 'text/plain' }).end(`hub-server: ${String(error)}`);
}

/** Takes the first armed fault for this request, counting a GET against its `times`. */
function takeFault(faults: HubFault[], method: string, path: string): HubFault | undefined {
  const index = faults.findIndex(
    (fault) =>
      (method === 'GET' || fault.kind === 'status') &&
      (fault.times ?? 1) > 0 &&
      (typeof fault.path === 'string' ? path.endsWith(fault.path) : path.search(fault.path) >= 0),
  );
  const fault = faults[index];
  if (!fault || method !== 'GET') return fault;
  fault.times = (fault.times ?? 1) - 1;
  if (fault.times <= 0) faults.splice(index, 1);
  return fault;
}

// ---------------------------------------------------------------------------------------------------------------------
// Answers

interface Body {
  length: number;
  chunks(): AsyncIterable<Buffer>;
}

interface Answer {
  status: number;
  headers: Record<string, string | number>;
  body: Body;
}

const RESOLVE = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/;
const TREE = /^\/api\/models\/([^/]+\/[^/]+)\/tree\/([^/]+)(?:\/(.*))?$/;

async function route(
  entry: HubRequest,
  url: URL,
  repos: Record<string, string>,
  ignoreRange: boolean,
): Promise<Answer> {
  const resolveMatch = RESOLVE.exec(entry.path);
  if (resolveMatch) {
    const [, repo = '', revision, path = ''] = resolveMatch;
    const folder = repos[repo];
    if (!folder) return repoNotFound(repo);
    if (revision !== 'main') return hubError('RevisionNotFound', `Invalid rev id: ${revision}`);
    return resolveFile(folder, path, entry, ignoreRange);
  }
  const treeMatch = TREE.exec(entry.path);
  if (treeMatch) {
    const [, repo = '', revision, dir = ''] = treeMatch;
    const folder = repos[repo];
    if (!folder) return repoNotFound(repo);
    if (revision !== 'main') return hubError('RevisionNotFound', `Invalid rev id: ${revision}`);
    const recursive = ['true', '1'].includes(url.searchParams.get('recursive') ?? '');
    return listing(folder, dir.replace(/\/+$/, ''), recursive);
  }
  return hubError('EntryNotFound', `No route for ${entry.path}`);
}

/** A file, whole or one byte range of it, with the headers the hub sends. */
async function resolveFile(folder: string, path: string, entry: HubRequest, ignoreRange: boolean): Promise<Answer> {
  const file = inside(folder, path);
  const facts = file === null ? null : await fileFacts(file);
  if (!file || !facts) return hubError('EntryNotFound', `Entry not found: ${path}`);
  const headers: Record<string, string | number> = {
    'content-type': extname(file) === '.json' ? 'application/json' : 'application/octet-stream',
    etag: facts.etag,
    ...(!ignoreRange && { 'accept-ranges': 'bytes' }),
    ...(facts.lfs && { 'x-linked-size': facts.size, 'x-linked-etag': facts.etag }),
  };
  // If-Range compares strongly: a weak or different ETag, or a date (no Last-Modified is sent), means the whole file.
  const honourRange = !ignoreRange && entry.range !== null && (entry.ifRange === null || entry.ifRange === facts.etag);
  const range = honourRange ? parseRange(entry.range ?? '', facts.size) : null;
  if (range === 'unsatisfiable') {
    return {
      status: 416,
      headers: { ...headers, 'content-range': `bytes */${facts.size}`, 'content-length': 0 },
      body: bufferBody(Buffer.alloc(0)),
    };
  }
  const { start, end } = range ?? { start: 0, end: facts.size };
  return {
    status: range ? 206 : 200,
    headers: {
      ...headers,
      'content-length': end - start,
      ...(range && { 'content-range': `bytes ${start}-${end - 1}/${facts.size}` }),
    },
    body: fileBody(file, start, end),
  };
}

/**
 * One range `bytes=a-b`, `bytes=a-` or `bytes=-n` as [start, end). null: no range to honour (none, several, or not
 * well-formed), which HTTP lets a server answer with the whole file.
 */
function parseRange(header: string, size: number): { start: number; end: number } | 'unsatisfiable' | null {
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match) return null;
  const [, first = '', last = ''] = match;
  if (first === '' && last === '') return null;
  if (first === '') {
    const suffix = Number(last);
    return suffix === 0 || size === 0 ? 'unsatisfiable' : { start: Math.max(0, size - suffix), end: size };
  }
  const start = Number(first);
  if (last !== '' && Number(last) < start) return null;
  if (start >= size) return 'unsatisfiable';
  return { start, end: last === '' ? size : Math.min(Number(last) + 1, size) };
}

/** The tree API's answer: the folder's entries (all of them below it with `recursive`) as the hub lists them. */
async function listing(folder: string, dir: string, recursive: boolean): Promise<Answer> {
  const path = inside(folder, dir);
  const info = path === null ? null : await stat(path).catch(() => null);
  if (!path || !info?.isDirectory()) return hubError('EntryNotFound', `Entry not found: ${dir}`);
  return jsonAnswer(200, await treeEntries(folder, dir, recursive));
}

function repoNotFound(repo: string): Answer {
  // The real hub answers 401 for a repo it does not show an anonymous client (it will not say whether a private one
  // exists); 404 with the same error code keeps "not found" plain for the tests.
  return hubError('RepoNotFound', `Repository not found: ${repo}`);
}

function hubError(code: 'RepoNotFound' | 'EntryNotFound' | 'RevisionNotFound', message: string): Answer {
  const answer = jsonAnswer(404, { error: message });
  // A header carries printable ASCII only; the message can quote a path that is not.
  const header = message.replace(/[^\x20-\x7e]/g, '?');
  return { ...answer, headers: { ...answer.headers, 'x-error-code': code, 'x-error-message': header } };
}

function injectedStatus(status: number): Answer {
  const body = Buffer.from(`hub-server: injected fault, HTTP ${status}\n`);
  return {
    status,
    headers: { 'content-type': 'text/plain; charset=utf-8', 'content-length': body.length },
    body: bufferBody(body),
  };
}

function jsonAnswer(status: number, value: unknown): Answer {
  const body = Buffer.from(JSON.stringify(value));
  return {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length },
    body: bufferBody(body),
  };
}

function fileBody(file: string, start: number, end: number): Body {
  return {
    length: end - start,
    chunks: () => (end > start ? createReadStream(file, { start, end: end - 1 }) : noChunks()),
  };
}

function bufferBody(buffer: Buffer): Body {
  return {
    length: buffer.length,
    chunks: () =>
      (async function* () {
        if (buffer.length > 0) yield buffer;
      })(),
  };
}

async function* noChunks(): AsyncIterable<Buffer> {}

// ---------------------------------------------------------------------------------------------------------------------
// Sending, with the faults that change a body

/** Writes the answer, or as much and as badly as `fault` says. */
async function send(res: ServerResponse, answer: Answer, fault: HubFault | undefined, entry: HubRequest) {
  const { length } = answer.body;
  const headers = { ...answer.headers };
  let limit = length;
  if (fault?.kind === 'cut' || fault?.kind === 'stall') limit = faultBytes(fault, length);
  if (fault?.kind === 'wrong-length') {
    limit = length - faultBytes(fault, length);
    // No Content-Length: Node sends the body chunked, and its clean end looks like a whole file to the client.
    delete headers['content-length'];
  }
  entry.status = answer.status;
  res.writeHead(answer.status, headers);
  res.flushHeaders();
  await pump(res, answer.body, limit, fault?.kind === 'corrupt' ? Math.floor(length / 2) : -1, entry);
  if (fault?.kind === 'stall') return;
  if (fault?.kind === 'cut') {
    // What was written goes out, then the connection closes short of Content-Length. (Resetting it outright could
    // throw away bytes still in flight, and bytesServed would then count bytes the client never saw.)
    res.socket?.destroySoon();
    return;
  }
  res.end();
}

/** `at` in bytes of a body of `length`: a fraction of it when 0 < at < 1, at most all of it. */
function faultBytes(fault: HubFault, length: number): number {
  const at = fault.at ?? 0.5;
  const bytes = at > 0 && at < 1 ? Math.floor(at * length) : Math.floor(at);
  return Math.min(Math.max(bytes, 0), length);
}

/** Writes the first `limit` bytes of `body`, the byte at `flipAt` (if any) inverted, minding backpressure. */
async function pump(res: ServerResponse, body: Body, limit: number, flipAt: number, entry: HubRequest) {
  let offset = 0;
  for await (const chunk of body.chunks()) {
    if (offset >= limit || res.destroyed) break;
    let part = chunk.subarray(0, limit - offset);
    if (flipAt >= offset && flipAt < offset + part.length) {
      part = Buffer.from(part);
      part.writeUInt8(part.readUInt8(flipAt - offset) ^ 0xff, flipAt - offset);
    }
    offset += part.length;
    entry.bytesSent += part.length;
    if (!res.write(part)) await drained(res);
  }
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((done) => {
    const settle = () => {
      res.off('drain', settle);
      res.off('close', settle);
      done();
    };
    res.on('drain', settle);
    res.on('close', settle);
  });
}

// ---------------------------------------------------------------------------------------------------------------------
// Files as git and the hub see them

interface FileFacts {
  size: number;
  sha256: string;
  /** The oid the tree API lists: the git blob SHA-1 of the file, or of its LFS pointer for an LFS file. */
  oid: string;
  lfs: boolean;
  /** Quoted: the SHA-256 for an LFS file, the git blob SHA-1 for the rest. */
  etag: string;
}

/** Extensions the hub's default .gitattributes keeps in LFS (those model folders have); larger files go there too. */
const LFS_EXTENSIONS = new Set(['.onnx', '.onnx_data', '.bin', '.wasm', '.safetensors', '.gguf']);
const LFS_MIN_SIZE = 10 * 1024 * 1024;

/** By path, size and modification time: a file that changes is hashed again. */
const hashed = new Map<string, Promise<FileFacts>>();

/** The file's size and hashes (null if it is not a file), each file hashed once. */
async function fileFacts(file: string): Promise<FileFacts | null> {
  const info = await stat(file).catch(() => null);
  if (!info?.isFile()) return null;
  const key = `${file}\0${info.size}\0${info.mtimeMs}`;
  let facts = hashed.get(key);
  if (!facts) {
    facts = hashFile(file, info.size);
    hashed.set(key, facts);
    facts.catch(() => hashed.delete(key));
  }
  return facts;
}

async function hashFile(file: string, size: number): Promise<FileFacts> {
  const sha256 = createHash('sha256');
  const blob = createHash('sha1').update(`blob ${size}\0`);
  for await (const chunk of createReadStream(file)) {
    sha256.update(chunk as Buffer);
    blob.update(chunk as Buffer);
  }
  const sha256Hex = sha256.digest('hex');
  const blobHex = blob.digest('hex');
  const lfs = LFS_EXTENSIONS.has(extname(file).toLowerCase()) || size > LFS_MIN_SIZE;
  return {
    size,
    sha256: sha256Hex,
    oid: lfs ? gitBlobOid(lfsPointer(sha256Hex, size)) : blobHex,
    lfs,
    etag: `"${lfs ? sha256Hex : blobHex}"`,
  };
}

/** What git stores for an LFS file in place of its bytes. */
function lfsPointer(sha256: string, size: number): string {
  return `version https://git-lfs.github.com/spec/v1\noid sha256:${sha256}\nsize ${size}\n`;
}

function gitBlobOid(content: string): string {
  const bytes = Buffer.from(content);
  return createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
}

interface TreeEntry {
  type: 'file' | 'directory';
  oid: string;
  size: number;
  path: string;
  lfs?: { oid: string; size: number; pointerSize: number };
}

/** The entries of `dir` (repo-relative, '' for the top), each directory followed by its own when `recursive`. */
async function treeEntries(folder: string, dir: string, recursive: boolean): Promise<TreeEntry[]> {
  const entries: TreeEntry[] = [];
  for (const name of (await readdir(join(folder, dir))).sort()) {
    const path = dir ? `${dir}/${name}` : name;
    const full = join(folder, path);
    const info = await stat(full);
    if (info.isDirectory()) {
      entries.push({ type: 'directory', oid: await gitTreeOid(full), size: 0, path });
      if (recursive) entries.push(...(await treeEntries(folder, path, true)));
      continue;
    }
    const facts = await fileFacts(full);
    if (!facts) continue;
    entries.push({
      type: 'file',
      oid: facts.oid,
      size: facts.size,
      path,
      ...(facts.lfs && {
        lfs: {
          oid: facts.sha256,
          size: facts.size,
          pointerSize: Buffer.byteLength(lfsPointer(facts.sha256, facts.size)),
        },
      }),
    });
  }
  return entries;
}

/** The git tree object ID of a folder, as a commit of it would have (LFS files as their pointers). */
async function gitTreeOid(folder: string): Promise<string> {
  const items: { key: Buffer; entry: Buffer }[] = [];
  for (const name of await readdir(folder)) {
    const full = join(folder, name);
    const info = await stat(full);
    const facts = info.isDirectory() ? null : await fileFacts(full);
    if (!info.isDirectory() && !facts) continue;
    const [mode, oid] = info.isDirectory() ? ['40000', await gitTreeOid(full)] : ['100644', facts!.oid];
    // Git orders a tree's entries by name, a directory's name as if it ended with '/'.
    const key = Buffer.from(info.isDirectory() ? `${name}/` : name);
    items.push({ key, entry: Buffer.concat([Buffer.from(`${mode} ${name}\0`), Buffer.from(oid, 'hex')]) });
  }
  const content = Buffer.concat(items.sort((a, b) => Buffer.compare(a.key, b.key)).map((item) => item.entry));
  return createHash('sha1').update(`tree ${content.length}\0`).update(content).digest('hex');
}

function inside(folder: string, path: string): string | null {
  const full = resolve(folder, path);
  const rel = relative(folder, full);
  return rel.startsWith('..') || isAbsolute(rel) ? null : full;
}

function decodePath(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

function oneHeader(value: string | string[] | undefined): string | null {
  return (Array.isArray(value) ? value[0] : value) ?? null;
}

// ---------------------------------------------------------------------------------------------------------------------
// The synthetic web-llm repo

const MODEL_LIBS_REPO = 'mlc-ai/binary-mlc-llm-libs';

/**
 * Tensors of the synthetic MLC model, shard by shard: name, shape, and how a float32 tensor is stored (`raw`: 4
 * bytes an element; `f32-to-bf16`: 2). The shards come to 256 KiB, 256 KiB and 97.5 KiB.
 */
const TINY_MLC_SHARDS: [name: string, shape: number[], format: 'raw' | 'f32-to-bf16'][][] = [
  [['model.embed_tokens.weight', [1024, 128], 'f32-to-bf16']],
  [
    ['model.layers.0.self_attn.qkv_proj.weight', [256, 128], 'raw'],
    ['model.layers.0.self_attn.o_proj.weight', [128, 128], 'f32-to-bf16'],
    ['model.layers.0.mlp.gate_up_proj.weight', [256, 128], 'f32-to-bf16'],
    ['model.layers.0.mlp.down_proj.weight', [128, 128], 'f32-to-bf16'],
  ],
  [
    ['model.layers.0.input_layernorm.weight', [128], 'raw'],
    ['model.layers.0.post_attention_layernorm.weight', [128], 'raw'],
    ['model.norm.weight', [128], 'raw'],
    ['model.layers.1.self_attn.qkv_proj.weight', [256, 128], 'f32-to-bf16'],
    ['model.layers.1.self_attn.o_proj.weight', [128, 128], 'f32-to-bf16'],
  ],
];

/**
 * Writes the web-llm repo `TINY_MLC` and its model library under `scratch`, and returns them as repos (the model under
 * `repo`). These bytes are test data for a downloader, laid out and described as web-llm reads them
 * (mlc-chat-config.json, tensor-cache.json and the shards it names, tokenizer.json, a wasm library), not a model
 * anything can run: the weights and the library are deterministic pseudo-random bytes.
 */
function writeTinyMlc(scratch: string, repo: string = TINY_MLC.repo): Record<string, string> {
  const model = join(scratch, 'Tiny-q4f32_1-MLC');
  const libs = join(scratch, 'binary-mlc-llm-libs');
  const libPath = TINY_MLC.modelLibPath.split('/resolve/main/')[1] ?? '';
  mkdirSync(model);
  mkdirSync(join(libs, libPath, '..'), { recursive: true });

  const records = TINY_MLC_SHARDS.map((tensors, shard) => {
    let byteOffset = 0;
    const tensorRecords = tensors.map(([name, shape, format]) => {
      const nbytes = shape.reduce((n, dim) => n * dim, 1) * (format === 'raw' ? 4 : 2);
      const record = { name, shape, dtype: 'float32', format, nbytes, byteOffset };
      byteOffset += nbytes;
      return record;
    });
    const dataPath = `params_shard_${shard}.bin`;
    const bytes = pseudoRandomBytes(`${TINY_MLC.modelId}/${dataPath}`, byteOffset);
    writeFileSync(join(model, dataPath), bytes);
    const md5sum = createHash('md5').update(bytes).digest('hex');
    return { dataPath, format: 'raw-shard', nbytes: byteOffset, records: tensorRecords, md5sum };
  });
  const paramSize = TINY_MLC_SHARDS.flat().reduce((n, [, shape]) => n + shape.reduce((a, b) => a * b, 1), 0);
  const paramBytes = records.reduce((n, r) => n + r.nbytes, 0);
  const metadata = { ParamSize: paramSize, ParamBytes: paramBytes, BitsPerParam: (paramBytes * 8) / paramSize };
  writeFileSync(join(model, 'tensor-cache.json'), JSON.stringify({ metadata, records }, null, 2));
  writeFileSync(join(model, 'mlc-chat-config.json'), JSON.stringify(tinyMlcChatConfig(), null, 2));
  copyFileSync(bundled('tiny-chat/tokenizer.json'), join(model, 'tokenizer.json'));

  // The wasm magic and version 1, so a check of the header passes; the rest is noise.
  const wasmHeader = Buffer.from([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);
  const wasm = Buffer.concat([wasmHeader, pseudoRandomBytes(TINY_MLC.modelLibPath, 64 * 1024 - wasmHeader.length)]);
  writeFileSync(join(libs, libPath), wasm);
  return { [repo]: model, [MODEL_LIBS_REPO]: libs };
}

/** An mlc-chat-config.json with the fields web-llm reads, for a llama the size of the shards above. */
function tinyMlcChatConfig() {
  const contextWindow = 2048;
  return {
    version: '0.1.0',
    model_type: 'llama',
    quantization: 'q4f32_1',
    model_config: {
      hidden_size: 128,
      intermediate_size: 128,
      num_attention_heads: 8,
      num_key_value_heads: 4,
      head_dim: 16,
      num_hidden_layers: 2,
      rms_norm_eps: 1e-5,
      vocab_size: 1024,
      tie_word_embeddings: true,
      position_embedding_base: 10000,
      context_window_size: contextWindow,
      prefill_chunk_size: contextWindow,
      tensor_parallel_shards: 1,
      max_batch_size: 1,
    },
    vocab_size: 1024,
    context_window_size: contextWindow,
    sliding_window_size: -1,
    prefill_chunk_size: contextWindow,
    attention_sink_size: -1,
    tensor_parallel_shards: 1,
    temperature: 0.7,
    presence_penalty: 0,
    frequency_penalty: 0,
    repetition_penalty: 1,
    top_p: 0.95,
    tokenizer_files: ['tokenizer.json'],
    tokenizer_info: {
      token_postproc_method: 'byte_level',
      prepend_space_in_encode: false,
      strip_space_in_decode: false,
    },
    // ChatML, with the special tokens of tiny-chat's tokenizer (copied into the repo).
    conv_template: {
      name: 'chatml',
      system_template: '<|im_start|>system\n{system_message}<|im_end|>\n',
      system_message: 'You are a helpful assistant.',
      roles: { user: '<|im_start|>user', assistant: '<|im_start|>assistant' },
      seps: ['<|im_end|>\n'],
      role_content_sep: '\n',
      role_empty_sep: '\n',
      stop_str: ['<|im_end|>'],
      stop_token_ids: [2],
      system_prefix_token_ids: [],
      add_role_after_system_message: true,
    },
    pad_token_id: 0,
    bos_token_id: 0,
    eos_token_id: 2,
  };
}

/** `length` deterministic bytes that look random, different for each seed (SHAKE256 as a stream of bytes). */
function pseudoRandomBytes(seed: string, length: number): Buffer {
  return createHash('shake256', { outputLength: length }).update(seed).digest();
}

// ---------------------------------------------------------------------------------------------------------------------
// Run directly: `npx tsx test/support/hub-server.ts [--port 5190]`

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const portFlag = process.argv.indexOf('--port');
  const port = portFlag >= 0 ? Number(process.argv[portFlag + 1]) : 0;
  const hub = await startHubServer({ port, repos: { ...BUNDLED_REPOS }, webLLM: true });
  console.log(hub.origin);
  const stop = () => void hub.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
