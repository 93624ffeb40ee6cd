import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_REPOS, startHubServer, TINY_MLC, type HubServer } from './support/hub-server.ts';

/**
 * The hub stand-in the downloader's tests run against (test/support/hub-server.ts), met as a downloader meets it: over
 * real HTTP with Node's fetch. Its answers must be the hub's to the byte and header, and each fault must fail a
 * download the way it says, or the downloader's tests would prove nothing.
 */
const CHAT = BUNDLED_REPOS['lantern/tiny-chat']!;
const ONNX = 'onnx/model.onnx';
const weights = readFileSync(join(CHAT, ONNX));
const config = readFileSync(join(CHAT, 'config.json'));

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const gitBlob = (bytes: Uint8Array) => createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');

let hub: HubServer;
const url = (path: string, repo = 'lantern/tiny-chat') => `${hub.origin}/${repo}/resolve/main/${path}`;
const get = (path: string, headers: Record<string, string> = {}) => fetch(url(path), { headers });
const bytesOf = async (response: Response) => Buffer.from(await response.arrayBuffer());
/** Buffer.equals: toEqual walks a few MB of bytes one by one for seconds. */
const expectBytes = (actual: Buffer, expected: Buffer) => {
  expect(actual.length).toBe(expected.length);
  expect(actual.equals(expected)).toBe(true);
};

/** Reads a body to its end or until it breaks off: the bytes that arrived, and the error if it broke. */
async function drain(response: Response): Promise<{ bytes: Buffer; error: unknown }> {
  const reader = response.body!.getReader();
  const chunks: Uint8Array[] = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { bytes: Buffer.concat(chunks), error: null };
      chunks.push(value);
    }
  } catch (error) {
    return { bytes: Buffer.concat(chunks), error };
  }
}

beforeAll(async () => {
  hub = await startHubServer({ repos: { 'lantern/tiny-chat': CHAT }, webLLM: true });
});
afterEach(() => {
  hub.reset();
  hub.offline = false;
});
afterAll(() => hub?.close());

describe('files, as huggingface.co serves them', () => {
  it('answers a GET with the whole file, a small file with its git blob SHA-1 as ETag', async () => {
    const response = await get('config.json');
    expect(response.status).toBe(200);
    expectBytes(await bytesOf(response), config);
    expect(Object.fromEntries(response.headers)).toMatchObject({
      'content-type': 'application/json',
      'content-length': String(config.length),
      'accept-ranges': 'bytes',
      etag: `"${gitBlob(config)}"`,
      'access-control-allow-origin': '*',
      'cache-control': 'no-store',
    });
    expect(response.headers.get('x-linked-size')).toBeNull();
    expect(hub.log).toEqual([
      {
        method: 'GET',
        path: '/lantern/tiny-chat/resolve/main/config.json',
        range: null,
        ifRange: null,
        status: 200,
        bytesSent: config.length,
      },
    ]);
  });

  it('answers an LFS file with its SHA-256 as ETag and the x-linked headers', async () => {
    const response = await get(ONNX);
    expectBytes(await bytesOf(response), weights);
    expect(response.headers.get('content-type')).toBe('application/octet-stream');
    expect(response.headers.get('etag')).toBe(`"${sha256(weights)}"`);
    expect(response.headers.get('x-linked-etag')).toBe(`"${sha256(weights)}"`);
    expect(response.headers.get('x-linked-size')).toBe(String(weights.length));
    expect(hub.bytesServed(ONNX)).toBe(weights.length);
  });

  it('answers HEAD with the same headers and no body', async () => {
    const response = await fetch(url(ONNX), { method: 'HEAD' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-length')).toBe(String(weights.length));
    expect(response.headers.get('etag')).toBe(`"${sha256(weights)}"`);
    expect(await response.text()).toBe('');
    expect(hub.log[0]).toMatchObject({ method: 'HEAD', status: 200, bytesSent: 0 });
  });

  const size = weights.length;
  it.each([
    ['bytes=1000-', 1000, size - 1],
    ['bytes=1000-1999', 1000, 1999],
    ['bytes=-500', size - 500, size - 1],
    [`bytes=${size - 10}-${size + 100}`, size - 10, size - 1],
  ])('answers Range %s with 206 and those bytes', async (range, first, last) => {
    const response = await get(ONNX, { range });
    expect(response.status).toBe(206);
    expect(response.headers.get('content-range')).toBe(`bytes ${first}-${last}/${size}`);
    expect(response.headers.get('content-length')).toBe(String(last - first + 1));
    expectBytes(await bytesOf(response), weights.subarray(first, last + 1));
    expect(hub.log[0]).toMatchObject({ range, status: 206, bytesSent: last - first + 1 });
  });

  it('answers a range that starts past the end with 416 and the size', async () => {
    const response = await get(ONNX, { range: `bytes=${size}-` });
    expect(response.status).toBe(416);
    expect(response.headers.get('content-range')).toBe(`bytes */${size}`);
  });

  it('honours If-Range with the file’s ETag, and answers the whole file for any other', async () => {
    const etag = `"${sha256(weights)}"`;
    const same = await get(ONNX, { range: 'bytes=100-', 'if-range': etag });
    expect(same.status).toBe(206);
    expectBytes(await bytesOf(same), weights.subarray(100));
    const changed = await get(ONNX, { range: 'bytes=100-', 'if-range': `"${'0'.repeat(64)}"` });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('content-range')).toBeNull();
    expectBytes(await bytesOf(changed), weights);
    expect(hub.log.map((r) => r.ifRange)).toEqual([etag, `"${'0'.repeat(64)}"`]);
  });

  it.each([
    ['an unknown file', '/lantern/tiny-chat/resolve/main/onnx/missing.onnx', 'EntryNotFound'],
    ['an unknown repo', '/lantern/nothing/resolve/main/config.json', 'RepoNotFound'],
    ['a path out of the repo', '/lantern/tiny-chat/resolve/main/..%2F..%2Fpackage.json', 'EntryNotFound'],
    ['a folder', '/lantern/tiny-chat/resolve/main/onnx', 'EntryNotFound'],
    ['another revision', '/lantern/tiny-chat/resolve/v2/config.json', 'RevisionNotFound'],
    ['the tree of an unknown repo', '/api/models/lantern/nothing/tree/main', 'RepoNotFound'],
  ])('answers %s with 404 and the hub’s error code', async (_, path, code) => {
    const response = await fetch(`${hub.origin}${path}`);
    expect(response.status).toBe(404);
    expect(response.headers.get('x-error-code')).toBe(code);
    expect(await response.json()).toEqual({ error: expect.any(String) });
  });
});

describe('the tree API', () => {
  const tree = async (query = '') => {
    const response = await fetch(`${hub.origin}/api/models/lantern/tiny-chat/tree/main${query}`);
    expect(response.status).toBe(200);
    return (await response.json()) as { type: string; path: string; oid: string; size: number; lfs?: unknown }[];
  };

  it('lists every file (recursive=true) with its size, git blob SHA-1, and SHA-256 for LFS files', async () => {
    const files = (dir: string): string[] =>
      readdirSync(join(CHAT, dir)).flatMap((name) => {
        const path = dir ? `${dir}/${name}` : name;
        return statSync(join(CHAT, path)).isDirectory() ? files(path) : [path];
      });
    const entries = await tree('?recursive=true');
    const folders = readdirSync(CHAT).filter((name) => statSync(join(CHAT, name)).isDirectory());
    expect(folders.sort()).toEqual(['gguf', 'onnx']);
    expect(entries.filter((e) => e.type === 'directory')).toEqual(
      folders.map((path) => ({ type: 'directory', oid: expect.stringMatching(/^[0-9a-f]{40}$/), size: 0, path })),
    );
    const listed = entries.filter((e) => e.type === 'file');
    expect(listed.map((e) => e.path).sort()).toEqual(files('').sort());
    for (const entry of listed) {
      const bytes = readFileSync(join(CHAT, entry.path));
      expect(entry.size).toBe(bytes.length);
      if (/\.(onnx|gguf)$/.test(entry.path)) {
        expect(entry.lfs).toEqual({ oid: sha256(bytes), size: bytes.length, pointerSize: expect.any(Number) });
        expect(entry.oid).toMatch(/^[0-9a-f]{40}$/);
      } else {
        expect(entry.lfs).toBeUndefined();
        expect(entry.oid).toBe(gitBlob(bytes));
      }
    }
  });

  it('lists only the top level without recursive', async () => {
    const paths = (await tree()).map((e) => e.path);
    expect(paths).toContain('onnx');
    expect(paths).toContain('config.json');
    expect(paths).not.toContain(ONNX);
  });
});

describe('CORS, for pages of another origin', () => {
  it('answers the preflight of a Range request', async () => {
    const response = await fetch(url(ONNX), {
      method: 'OPTIONS',
      headers: {
        origin: 'http://127.0.0.1:4173',
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'range,if-range',
      },
    });
    expect(response.status).toBe(204);
    expect(Object.fromEntries(response.headers)).toMatchObject({
      'access-control-allow-origin': '*',
      'access-control-allow-methods': 'GET, HEAD, OPTIONS',
      'access-control-allow-headers': 'Range, If-Range, Content-Type, Authorization',
      'access-control-max-age': '600',
    });
  });

  it('exposes the headers a resumable, verified download reads', async () => {
    const response = await get(ONNX, { origin: 'http://127.0.0.1:4173', range: 'bytes=0-0' });
    await response.arrayBuffer();
    const exposed = response.headers.get('access-control-expose-headers')!.toLowerCase().split(', ');
    for (const header of ['content-range', 'content-length', 'etag', 'accept-ranges', 'x-linked-size', 'x-linked-etag'])
      expect(exposed).toContain(header);
  });
});

describe('faults', () => {
  it('cut: the body breaks off after `at` bytes, and bytesServed counts them', async () => {
    hub.faults.push({ path: ONNX, kind: 'cut', at: 100_000 });
    const response = await get(ONNX);
    expect(response.status).toBe(200);
    const { bytes, error } = await drain(response);
    expect(error).toBeInstanceOf(TypeError);
    expectBytes(bytes, weights.subarray(0, 100_000));
    expect(hub.bytesServed(ONNX)).toBe(100_000);
    expect(hub.faults).toEqual([]);
    expectBytes(await bytesOf(await get(ONNX)), weights);
  });

  it('cut: a fraction `at` is of the range asked for', async () => {
    hub.faults.push({ path: ONNX, kind: 'cut', at: 0.25 });
    const response = await get(ONNX, { range: 'bytes=1000-' });
    expect(response.status).toBe(206);
    const { bytes, error } = await drain(response);
    expect(error).toBeTruthy();
    expectBytes(bytes, weights.subarray(1000, 1000 + Math.floor((weights.length - 1000) / 4)));
  });

  it('stall: the body stops and the connection stays open until the client gives up', async () => {
    hub.faults.push({ path: ONNX, kind: 'stall', at: 1000 });
    const started = Date.now();
    const response = await fetch(url(ONNX), { signal: AbortSignal.timeout(300) });
    const { bytes, error } = await drain(response);
    expect((error as Error).name).toBe('TimeoutError');
    expect(bytes.length).toBe(1000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(hub.bytesServed(ONNX)).toBe(1000);
  });

  it('status: answers the status, HEAD too, counting only GETs against `times`', async () => {
    hub.faults.push({ path: ONNX, kind: 'status', status: 503 });
    const head = await fetch(url(ONNX), { method: 'HEAD' });
    expect(head.status).toBe(503);
    expect(hub.faults).toHaveLength(1);
    const response = await get(ONNX);
    expect(response.status).toBe(503);
    expect(await response.text()).toContain('503');
    expect(hub.faults).toEqual([]);
    expect((await get(ONNX)).status).toBe(200);
  });

  it('wrong-length: a chunked body `at` bytes short that ends cleanly', async () => {
    hub.faults.push({ path: ONNX, kind: 'wrong-length', at: 1000 });
    const response = await get(ONNX);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-length')).toBeNull();
    expect(response.headers.get('transfer-encoding')).toBe('chunked');
    expectBytes(await bytesOf(response), weights.subarray(0, weights.length - 1000));
  });

  it('corrupt: the same length, another SHA-256, one byte changed', async () => {
    hub.faults.push({ path: ONNX, kind: 'corrupt' });
    const response = await get(ONNX);
    const bytes = await bytesOf(response);
    expect(response.headers.get('etag')).toBe(`"${sha256(weights)}"`);
    expect(bytes.length).toBe(weights.length);
    expect(sha256(bytes)).not.toBe(sha256(weights));
    expect(bytes.filter((byte, i) => byte !== weights[i])).toHaveLength(1);
  });

  it('no-range: the whole file with 200 and no Accept-Ranges, whatever Range asks', async () => {
    hub.faults.push({ path: ONNX, kind: 'no-range' });
    const response = await get(ONNX, { range: 'bytes=1000-' });
    expect(response.status).toBe(200);
    expect(response.headers.get('accept-ranges')).toBeNull();
    expect(response.headers.get('content-range')).toBeNull();
    expectBytes(await bytesOf(response), weights);
  });

  it('times: counts down with each GET it hits, and Infinity never runs out', async () => {
    const twice = { path: 'config.json', kind: 'status' as const, times: 2 };
    hub.faults.push(twice);
    expect((await get('config.json')).status).toBe(500);
    expect(twice.times).toBe(1);
    expect((await get('config.json')).status).toBe(500);
    expect((await get('config.json')).status).toBe(200);
    expect(hub.faults).toEqual([]);

    hub.faults.push({ path: /\.json$/, kind: 'status', status: 502, times: Infinity });
    for (const path of ['config.json', 'tokenizer.json', 'config.json']) expect((await get(path)).status).toBe(502);
    expect((await get(ONNX)).status).toBe(200);
    expect(hub.faults).toHaveLength(1);
  });

  it('leaves HEAD alone except for status, and does not count it', async () => {
    hub.faults.push({ path: ONNX, kind: 'cut', at: 10 });
    const head = await fetch(url(ONNX), { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(hub.faults).toHaveLength(1);
  });

  it('reset() clears the log and the faults', async () => {
    hub.faults.push({ path: ONNX, kind: 'cut' });
    await get('config.json');
    hub.reset();
    expect(hub.log).toEqual([]);
    expect(hub.faults).toEqual([]);
    expect(hub.bytesServed('config.json')).toBe(0);
  });
});

describe('offline', () => {
  it('fails every request as a network that is off would, until it is back', async () => {
    hub.offline = true;
    await expect(get('config.json')).rejects.toThrow(TypeError);
    expect(hub.log).toHaveLength(1);
    expect(hub.log[0]).toMatchObject({ path: '/lantern/tiny-chat/resolve/main/config.json', status: 0, bytesSent: 0 });
    hub.offline = false;
    expect((await get('config.json')).status).toBe(200);
  });

  it('drops the downloads under way when it goes off', async () => {
    hub.faults.push({ path: ONNX, kind: 'stall', at: 1000 });
    const reader = (await get(ONNX)).body!.getReader();
    expect((await reader.read()).done).toBe(false);
    hub.offline = true;
    await expect(reader.read()).rejects.toThrow(TypeError);
  });
});

describe('the web-llm repo', () => {
  const mlc = (path: string) => fetch(url(path, TINY_MLC.repo));

  it('has a chat config whose tokenizer files it serves', async () => {
    const chatConfig = (await (await mlc('mlc-chat-config.json')).json()) as Record<string, unknown>;
    expect(chatConfig).toMatchObject({ model_type: 'llama', context_window_size: 2048 });
    expect(chatConfig.tokenizer_files).toEqual(['tokenizer.json']);
    const tokenizer = await bytesOf(await mlc('tokenizer.json'));
    expectBytes(tokenizer, readFileSync(join(CHAT, 'tokenizer.json')));
  });

  it('has a tensor cache whose shards are the bytes it describes', async () => {
    interface TensorRecord {
      name: string;
      shape: number[];
      dtype: string;
      format: string;
      nbytes: number;
      byteOffset: number;
    }
    interface ShardRecord {
      dataPath: string;
      format: string;
      nbytes: number;
      md5sum: string;
      records: TensorRecord[];
    }
    const { records } = (await (await mlc('tensor-cache.json')).json()) as { records: ShardRecord[] };
    expect(records.map((r) => r.dataPath)).toEqual(['params_shard_0.bin', 'params_shard_1.bin', 'params_shard_2.bin']);
    for (const shard of records) {
      const response = await mlc(shard.dataPath);
      expect(response.headers.get('x-linked-size')).toBe(String(shard.nbytes));
      const bytes = await bytesOf(response);
      expect(bytes.length).toBe(shard.nbytes);
      expect(createHash('md5').update(bytes).digest('hex')).toBe(shard.md5sum);
      // Tensors lie end to end and fill the shard, each as many bytes as its shape and format take.
      let offset = 0;
      for (const tensor of shard.records) {
        expect(tensor.byteOffset).toBe(offset);
        const elements = tensor.shape.reduce((n, dim) => n * dim, 1);
        expect(tensor.nbytes).toBe(elements * (tensor.format === 'f32-to-bf16' ? 2 : 4));
        offset += tensor.nbytes;
      }
      expect(offset).toBe(shard.nbytes);
    }
  });

  it('serves the model library, a wasm header on deterministic bytes', async () => {
    const response = await fetch(`${hub.origin}${TINY_MLC.modelLibPath}`);
    expect(response.status).toBe(200);
    const bytes = await bytesOf(response);
    expect(bytes.length).toBe(64 * 1024);
    expect([...bytes.subarray(0, 8)]).toEqual([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);
    expect(response.headers.get('etag')).toBe(`"${sha256(bytes)}"`);
  });
});

describe('close()', () => {
  it('ends stalled connections rather than waiting for them', async () => {
    const own = await startHubServer({ repos: { 'lantern/tiny-chat': CHAT } });
    own.faults.push({ path: ONNX, kind: 'stall', at: 10 });
    const response = await fetch(`${own.origin}/lantern/tiny-chat/resolve/main/${ONNX}`);
    const body = drain(response);
    await own.close();
    expect((await body).error).toBeTruthy();
    await expect(fetch(`${own.origin}/lantern/tiny-chat/resolve/main/config.json`)).rejects.toThrow(TypeError);
  });
});
