/**
 * Lantern's package is MIT and ships no copyleft code (issue 46, plan §8): LAME (mp3) and FFmpeg's AAC encoder are
 * LGPL, eSpeak NG GPL, and each stays a package of its own that Lantern loads at run time (LAME's
 * `wasm-media-encoders` is Lantern's dependency, the others the app installs), never code in Lantern's files. This
 * builds what `npm run build:lib` puts in dist/static (the engine worker with its engines, the service workers) in
 * memory, as that script does, and fails if any of their markers is in it: a static import of one of them would pull
 * it into the package. The markers are checked against the packages themselves first, so they cannot go stale.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bundle, type BuiltFiles } from '../src/vite/bundle.ts';

/** Strings that survive bundling and minification of each package, by what they betray. */
const COPYLEFT_MARKERS: Record<string, string[]> = {
  // wasm-media-encoders' glue around LAME (its ESM build inlines the wasm, so the glue is what shows), and LAME's
  // own URL in a .wasm file emitted beside the bundle.
  LAME: ['enc_get_out_buf', 'lame.sf.net'],
  // @mediabunny/aac-encoder: FFmpeg's libavcodec.
  FFmpeg: ['libavcodec', 'Lavc'],
  // eSpeak NG's emscripten worker class (phonemizer, @echogarden/espeak-ng-emscripten).
  'eSpeak NG': ['eSpeakNGWorker'],
};

const root = process.cwd();
const options = { root, mode: 'production' };

/** Each marker found in the files, as "marker in file". */
function markersIn(files: Iterable<[string, string | Uint8Array]>): string[] {
  const found: string[] = [];
  for (const [name, content] of files) {
    const text = typeof content === 'string' ? content : Buffer.from(content).toString('latin1');
    for (const markers of Object.values(COPYLEFT_MARKERS)) {
      for (const marker of markers) if (text.includes(marker)) found.push(`${marker} in ${name}`);
    }
  }
  return found;
}

function* filesUnder(folder: string): Generator<[string, Uint8Array]> {
  for (const name of readdirSync(folder)) {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) yield* filesUnder(path);
    else yield [path, readFileSync(path)];
  }
}

describe('licence guard: no copyleft code in the package', () => {
  it('the markers find the optional LGPL encoders when something does bundle them', async () => {
    // The entry must sit inside the project so that its imports resolve from its node_modules.
    const folder = join(root, 'node_modules/.cache/lantern-licence-guard');
    mkdirSync(folder, { recursive: true });
    const entry = join(folder, 'bundles-lgpl.ts');
    writeFileSync(
      entry,
      `import { createMp3Encoder } from 'wasm-media-encoders';
import { registerAacEncoder } from '@mediabunny/aac-encoder';
self.onmessage = async () => { registerAacEncoder(); self.postMessage(await createMp3Encoder()); };
`,
    );
    try {
      const found = markersIn(await bundle(entry, 'es', options));
      expect(found.some((hit) => hit.startsWith('enc_get_out_buf'))).toBe(true);
      expect(found.some((hit) => hit.startsWith('libavcodec'))).toBe(true);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  }, 120_000);

  it("build:lib's static files (engine worker, service workers) contain none of them", async () => {
    const built: BuiltFiles[] = [
      await bundle('src/worker/engine-worker.ts', 'es', options),
      await bundle('sw/service-worker.ts', 'iife', options),
      await bundle('sw/standalone-service-worker.ts', 'iife', options),
    ];
    expect(built.flatMap((files) => markersIn(files))).toEqual([]);
  }, 300_000);

  it.skipIf(!existsSync('dist/static'))('the last build:lib output (dist/static) contains none of them', () => {
    expect(markersIn(filesUnder('dist/static'))).toEqual([]);
  });
});
