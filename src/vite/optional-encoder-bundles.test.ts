/**
 * The LGPL encoders in an app's build (issue 46): Lantern's Vite plugin bundles `wasm-media-encoders` (mp3, Lantern's
 * dependency) and `@mediabunny/aac-encoder` (aac, where the app installed it) for the engine worker, each from the
 * node_modules that holds it. This repository has both, so it serves as the app here.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseAst, type Connect, type Plugin, type ResolvedConfig, type ViteDevServer } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lantern } from './lantern-plugin.ts';
import { bundleOptionalEncoders, mediabunnyShim, type OptionalEncoderBundles } from './optional-encoder-bundles.ts';

const root = process.cwd();
/** In LAME's glue (wasm-media-encoders' module) and in LAME itself (its .wasm); see test/licence-guard.test.ts. */
const LAME = ['enc_get_out_buf', 'lame.sf.net'];
/** A message of mediabunny's `registerEncoder`: any copy of mediabunny that can register an encoder holds it. */
const MEDIABUNNY_COPY = 'Encoder must be a CustomVideoEncoder or CustomAudioEncoder.';

const text = (content: string | Uint8Array | undefined) =>
  typeof content === 'string' ? content : Buffer.from(content ?? []).toString('latin1');

/** The specifiers a built module imports (statically, or by a literal dynamic import). */
function importsOf(code: string): string[] {
  const found = parseAst(code).body.flatMap((node) =>
    (node.type === 'ImportDeclaration' || node.type === 'ExportAllDeclaration') && typeof node.source.value === 'string'
      ? [node.source.value]
      : node.type === 'ExportNamedDeclaration' && typeof node.source?.value === 'string'
        ? [node.source.value]
        : [],
  );
  return [...found, ...[...code.matchAll(/import\(\s*["'`]([^"'`]+)["'`]/g)].map((match) => match[1]!)];
}

/** What the engine worker does before it imports an optional module (src/worker/optional-modules.ts). */
const shareMediabunny = (load: (() => Promise<unknown>) | undefined) =>
  void ((globalThis as Record<string, unknown>).__lanternMediabunny = load);

describe('optional encoders, bundled for the engine worker from the app', () => {
  let bundles: OptionalEncoderBundles;
  let folder: string;
  beforeAll(async () => {
    bundles = await bundleOptionalEncoders(root, 'production');
  }, 120_000);
  afterAll(() => {
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it('builds both packages, each as the module the engine worker imports by file name', () => {
    expect(bundles.failed).toEqual([]);
    expect(bundles.built.sort()).toEqual(['@mediabunny/aac-encoder', 'wasm-media-encoders']);
    expect(bundles.files.has('wasm-media-encoders.js')).toBe(true);
    expect(bundles.files.has('mediabunny-aac-encoder.js')).toBe(true);
    expect(bundles.files.has('mediabunny-shim.js')).toBe(true);
  });

  it('mp3: LAME, as a .wasm file beside its module (no data: URL), and no Vorbis nor mediabunny', () => {
    const module = text(bundles.files.get('wasm-media-encoders.js'));
    expect(module).toContain(LAME[0]);
    expect(module).not.toContain('data:application/wasm');
    const wasm = [...bundles.files].filter(([name]) => name.endsWith('.wasm'));
    expect(wasm).toHaveLength(1);
    const [wasmName, wasmBytes] = wasm[0]!;
    expect(text(wasmBytes)).toContain(LAME[1]);
    expect(module).toContain(`new URL(\`${wasmName}\`,import.meta.url)`);
    expect(module).not.toContain(MEDIABUNNY_COPY);
    expect(importsOf(module)).toEqual([]);
  });

  it("aac: FFmpeg's encoder, importing mediabunny only through the shim, with no copy of its own", () => {
    const built = [...bundles.files].filter(([name]) => name.endsWith('.js'));
    for (const [name, code] of built) {
      expect(text(code), name).not.toContain(MEDIABUNNY_COPY);
      // Every import is a sibling file of the build: nothing bare (no `mediabunny`) is left to resolve.
      for (const specifier of importsOf(text(code))) {
        expect(specifier, name).toMatch(/^\.\//);
        expect(bundles.files.has(specifier.slice(2)), `${name} imports ${specifier}`).toBe(true);
      }
    }
    const aac = text(bundles.files.get('mediabunny-aac-encoder.js'));
    expect(aac).toContain('libavcodec');
    expect(importsOf(aac)).toContain('./mediabunny-shim.js');
  });

  it("the shim gives the engine worker's own mediabunny, loaded when the shim is imported", async () => {
    folder = mkdtempSync(join(tmpdir(), 'lantern-optional-'));
    writeFileSync(join(folder, 'mediabunny-shim.js'), bundles.files.get('mediabunny-shim.js')!);
    const mediabunny = await import('mediabunny');
    let loads = 0;
    shareMediabunny(async () => (loads++, mediabunny));
    try {
      const shim = (await import(pathToFileURL(join(folder, 'mediabunny-shim.js')).href)) as Record<string, unknown>;
      expect(loads).toBe(1);
      expect(Object.keys(shim).sort()).toEqual(['CustomAudioEncoder', 'EncodedPacket', 'Logging', 'registerEncoder']);
      expect(shim.registerEncoder).toBe(mediabunny.registerEncoder);
      expect(shim.CustomAudioEncoder).toBe(mediabunny.CustomAudioEncoder);
    } finally {
      shareMediabunny(undefined);
    }
  });

  it('a shim that names what mediabunny lacks fails when imported, saying so', async () => {
    const file = join(folder, 'lacking-shim.js');
    writeFileSync(file, mediabunnyShim(['registerEncoder', 'NotInMediabunny']));
    shareMediabunny(async () => import('mediabunny'));
    try {
      await expect(import(pathToFileURL(file).href)).rejects.toThrow(/has no NotInMediabunny/);
    } finally {
      shareMediabunny(undefined);
    }
  });

  it("builds mp3's for an app that installed neither, from beside Lantern, and no aac", async () => {
    const bare = mkdtempSync(join(tmpdir(), 'lantern-no-encoders-'));
    try {
      // Lantern is this repository here, whose node_modules has both: only its dependency is taken from there.
      const mp3Only = await bundleOptionalEncoders(bare, 'production', root);
      expect(mp3Only.failed).toEqual([]);
      expect(mp3Only.built).toEqual(['wasm-media-encoders']);
      expect(text(mp3Only.files.get('wasm-media-encoders.js'))).toContain(LAME[0]);
      expect([...mp3Only.files.keys()].filter((name) => /aac|mediabunny/.test(name))).toEqual([]);
      // Where Lantern itself has no copy either (an install that left it out), nothing is built.
      const none = await bundleOptionalEncoders(bare, 'production', bare);
      expect(none).toEqual({ files: new Map(), built: [], failed: [] });
    } finally {
      rmSync(bare, { recursive: true, force: true });
    }
  }, 120_000);

  it('`vite dev` serves them beside the engine worker, under lantern/optional/', async () => {
    const plugin: Plugin = lantern();
    const call = (hook: unknown, ...args: unknown[]) =>
      (typeof hook === 'function' ? hook : (hook as { handler: (...a: unknown[]) => unknown }).handler)(...args);
    const logged: string[] = [];
    const logger = { info: (m: string) => logged.push(m), warn: (m: string) => logged.push(m) };
    call(plugin.configResolved, { root, mode: 'development', base: '/', logger } as unknown as ResolvedConfig);
    let middleware: Connect.NextHandleFunction | undefined;
    const server = { middlewares: { use: (handler: Connect.NextHandleFunction) => void (middleware = handler) } };
    call(plugin.configureServer, server as unknown as ViteDevServer);
    const get = (url: string) =>
      new Promise<{ type?: string; body?: string | Uint8Array; next?: true }>((resolve) => {
        const headers: Record<string, string> = {};
        const res = {
          setHeader: (name: string, value: string) => void (headers[name] = value),
          end: (body: string | Uint8Array) => resolve({ type: headers['content-type'], body }),
        };
        middleware!({ url } as Connect.IncomingMessage, res as never, () => resolve({ next: true }));
      });
    const mp3 = await get('/lantern/optional/wasm-media-encoders.js');
    expect(mp3.type).toBe('text/javascript');
    expect(text(mp3.body)).toContain(LAME[0]);
    expect((await get('/lantern/optional/mediabunny-shim.js')).type).toBe('text/javascript');
    expect(await get('/lantern/optional/not-installed.js')).toEqual({ next: true });
    expect(logged.join('\n')).toContain('wasm-media-encoders');
  }, 120_000);
});
