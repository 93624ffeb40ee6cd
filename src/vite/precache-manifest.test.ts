import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { injectManifest, listFiles, precacheManifest, wantsManifest } from './precache-manifest.ts';

describe('the precache list', () => {
  let folder: string;
  afterEach(() => rmSync(folder, { recursive: true, force: true }));

  const build = (files: Record<string, string>) => {
    folder = mkdtempSync(join(tmpdir(), 'lantern-precache-'));
    for (const [name, content] of Object.entries(files)) {
      mkdirSync(join(folder, name, '..'), { recursive: true });
      writeFileSync(join(folder, name), content);
    }
    return folder;
  };

  it('lists every file of a build, sorted, by /-separated path, with revisions that follow the content', () => {
    const out = build({ 'index.html': 'a', 'assets/x.js': 'b', 'models/m/onnx/model.onnx': 'c', 'x.js.map': 'd' });
    expect([...listFiles(out).keys()]).toEqual(['assets/x.js', 'index.html', 'models/m/onnx/model.onnx', 'x.js.map']);
    const entries = precacheManifest(out, (file) => !file.endsWith('.map'));
    expect(entries.map((e) => e.url)).toEqual(['assets/x.js', 'index.html', 'models/m/onnx/model.onnx']);
    const again = precacheManifest(build({ 'index.html': 'a', 'assets/x.js': 'changed' }), () => true);
    expect(again.find((e) => e.url === 'index.html')!.revision).toBe(entries[1]!.revision);
    expect(again.find((e) => e.url === 'assets/x.js')!.revision).not.toBe(entries[0]!.revision);
  });

  it("leaves out onnxruntime-web's binaries, which the engine worker caches by device, but not their factories", () => {
    const out = build({
      'lantern/engine-worker.js': 'a',
      'lantern/ort-wasm-simd-threaded-Ab1.wasm': 'b',
      'lantern/ort-wasm-simd-threaded-Cd2.mjs': 'c',
      'lantern/ort-wasm-simd-threaded.asyncify-Ef3.wasm': 'd',
      'lantern/ort-wasm-simd-threaded.asyncify-Gh4.mjs': 'e',
      'assets/ort-wasm-simd-threaded.asyncify-Ef3.wasm': 'd',
      'models/m/onnx/model.wasm': 'f',
    });
    expect(precacheManifest(out, () => true).map((e) => e.url)).toEqual([
      'lantern/engine-worker.js',
      'lantern/ort-wasm-simd-threaded-Cd2.mjs',
      'lantern/ort-wasm-simd-threaded.asyncify-Gh4.mjs',
      'models/m/onnx/model.wasm',
    ]);
  });

  it("writes the list where the service worker asks for it, once, and refuses code that doesn't ask once", () => {
    const code = 'mount(self);precache(self.__WB_MANIFEST);';
    expect(wantsManifest(code)).toBe(true);
    expect(injectManifest(code, [{ url: 'a.js', revision: '1' }])).toBe(
      'mount(self);precache([{"url":"a.js","revision":"1"}]);',
    );
    expect(() => injectManifest('mount(self);', [])).toThrow(/once, not 0 times/);
    expect(() => injectManifest(`${code}${code}`, [])).toThrow(/once, not 2 times/);
  });
});
