/**
 * Lantern's Vite plugin under `vite preview` (what the quick start's `npm run preview` and the playground's `npm start`
 * run): model weights go out as they are, the app's code compressed as Vite compresses it.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { preview, type PreviewServer } from 'vite';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { lantern } from './lantern-plugin.ts';

let folder: string;
let server: PreviewServer;

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'lantern-preview-'));
  mkdirSync(join(folder, 'dist/models/m/onnx'), { recursive: true });
  // Text-like bytes, which gzip would shrink a lot: only the name says they are weights.
  writeFileSync(join(folder, 'dist/models/m/onnx/model.onnx'), 'weights '.repeat(4096));
  writeFileSync(join(folder, 'dist/models/m/m.gguf'), 'weights '.repeat(4096));
  writeFileSync(join(folder, 'dist/app.js'), 'console.log("app");\n'.repeat(512));
  server = await preview({
    root: folder,
    configFile: false,
    logLevel: 'silent',
    plugins: [lantern()],
    preview: { host: '127.0.0.1', port: 0 },
  });
});

afterAll(async () => {
  await server?.close();
  rmSync(folder, { recursive: true, force: true });
});

/** The headers of a GET that accepts gzip, as browsers send it. */
function headersOf(path: string): Promise<Record<string, string | string[] | undefined>> {
  const { port } = server.httpServer.address() as { port: number };
  return new Promise((resolve, reject) => {
    const sent = request(
      { host: '127.0.0.1', port, path, headers: { 'accept-encoding': 'gzip, deflate, br' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.headers));
      },
    );
    sent.on('error', reject).end();
  });
}

it('vite preview sends model weights uncompressed, whole, and still compresses the app', async () => {
  for (const path of ['/models/m/onnx/model.onnx', '/models/m/m.gguf']) {
    const headers = await headersOf(path);
    expect(headers['content-encoding'], path).toBeUndefined();
    expect(headers['content-length'], path).toBe(String('weights '.length * 4096));
  }
  expect((await headersOf('/app.js'))['content-encoding']).toBe('gzip');
});
