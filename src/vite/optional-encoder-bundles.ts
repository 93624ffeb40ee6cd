/**
 * The LGPL encoders, bundled in the app's own build for its engine worker, which imports them at run time
 * (src/worker/optional-modules.ts): `wasm-media-encoders` holds LAME for mp3, OpenAI's default format, and is one of
 * Lantern's dependencies, so every app has it; `@mediabunny/aac-encoder` (FFmpeg's AAC encoder) only where the app
 * installed it. Lantern's own files never hold them (it is MIT, test/licence-guard.test.ts): they are built here, each
 * as a module of its own beside the engine worker, from the node_modules that has them.
 */
import { existsSync } from 'node:fs';
import { mkdir, rm, rmdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { bundle, type BuiltFiles } from './bundle.ts';
import { packageRoot } from './package-files.ts';

/*
 * The names below are where the engine worker looks (src/worker/optional-modules.ts, which this build tooling, run in
 * Node, does not import): keep the two alike. test/e2e/speech-formats.spec.ts has the engine worker load them.
 */

/** The folder of the optional modules, beside the engine worker's file (`lantern/optional/`). */
export const OPTIONAL_FOLDER = 'optional';

/** The file of a package's module in that folder: `@mediabunny/aac-encoder` → `mediabunny-aac-encoder.js`. */
export const optionalModuleFile = (name: string) => `${name.replace(/^@/, '').replace(/[^\w.-]+/g, '-')}.js`;

/** The module that stands for `mediabunny` in the bundles (see mediabunnyShim). */
export const MEDIABUNNY_SHIM_FILE = 'mediabunny-shim.js';

/** The global function through which the shim imports the engine worker's mediabunny. */
const SHARED_MEDIABUNNY = '__lanternMediabunny';

/**
 * What the engine worker gets as each package: the module that the entry generated for it exports. `@mediabunny/aac-
 * encoder` as it is. `wasm-media-encoders`' own `createMp3Encoder` fetches LAME from a data: URL, which a strict
 * Content-Security-Policy refuses (`connect-src`), and its module inlines Ogg Vorbis' encoder too: here it gets LAME's
 * .wasm as a file beside the module instead, and no Vorbis.
 */
const ENTRIES = {
  'wasm-media-encoders': [
    "import { createEncoder } from 'wasm-media-encoders';",
    "import mp3 from 'wasm-media-encoders/wasm/mp3?url';",
    'export { createEncoder };',
    "export const createMp3Encoder = () => createEncoder('audio/mpeg', mp3);",
  ].join('\n'),
  '@mediabunny/aac-encoder': "export * from '@mediabunny/aac-encoder';",
} as const;

/** The optional encoder packages (src/audio/encode/optional-encoders.ts lists them, with their formats). */
export type OptionalEncoderPackage = keyof typeof ENTRIES;

/**
 * The packages among them that Lantern's package.json lists in `dependencies`: where the app has no copy of its own,
 * they are found beside Lantern (`node_modules/lantern/node_modules` where npm did not hoist them to the app's).
 */
const LANTERN_DEPENDENCIES: ReadonlySet<OptionalEncoderPackage> = new Set(['wasm-media-encoders']);

/**
 * The `node_modules` folder that holds package `name` for an app at `root`: the first above `root` that has
 * `name/package.json` (as Node resolves it; a package need not export its package.json, so it is looked for, not
 * resolved).
 */
export function installedIn(name: string, root: string): string | undefined {
  for (let folder = resolve(root); ; folder = dirname(folder)) {
    const modules = join(folder, 'node_modules');
    if (existsSync(join(modules, name, 'package.json'))) return modules;
    if (dirname(folder) === folder) return undefined;
  }
}

export interface OptionalEncoderBundles {
  /** The built files by name, relative to the optional folder (`mediabunny-aac-encoder.js`, the shim, assets). */
  files: BuiltFiles;
  /** The packages built. */
  built: OptionalEncoderPackage[];
  /** Each package found but not built, and why. */
  failed: { name: OptionalEncoderPackage; error: unknown }[];
}

/**
 * Bundles each encoder package installed for the app at `root`, or beside Lantern for Lantern's own dependencies
 * (`lanternRoot`: Lantern's package folder): `<file>.js` per package (see optionalModuleFile), with its chunks and
 * assets, and, where one imports mediabunny, the shim that gives it the engine worker's own. A package that fails to
 * build is reported, not thrown: the app still builds, and the engine refuses that format as if it were not installed.
 *
 * @example
 * const { files } = await bundleOptionalEncoders(config.root, config.mode);
 * for (const [name, source] of files) emit(`lantern/optional/${name}`, source);
 */
export async function bundleOptionalEncoders(
  root: string,
  mode: string,
  lanternRoot = packageRoot(),
): Promise<OptionalEncoderBundles> {
  const names = Object.keys(ENTRIES) as OptionalEncoderPackage[];
  const found = names.flatMap((name) => {
    const modules =
      installedIn(name, root) ?? (LANTERN_DEPENDENCIES.has(name) ? installedIn(name, lanternRoot) : undefined);
    return modules ? [{ name, modules }] : [];
  });
  const results = await Promise.allSettled(found.map(({ name, modules }) => bundlePackage(name, modules, root, mode)));
  const files: BuiltFiles = new Map();
  const shared = new Set<string>();
  const result: OptionalEncoderBundles = { files, built: [], failed: [] };
  results.forEach((settled, index) => {
    const { name } = found[index]!;
    if (settled.status === 'rejected') return void result.failed.push({ name, error: settled.reason });
    for (const [file, content] of settled.value.files) files.set(file, content);
    for (const binding of settled.value.mediabunny) shared.add(binding);
    result.built.push(name);
  });
  if (shared.size > 0) files.set(MEDIABUNNY_SHIM_FILE, mediabunnyShim([...shared].sort()));
  return result;
}

/** One package's files, and the names its code imports from mediabunny. */
async function bundlePackage(
  name: OptionalEncoderPackage,
  modules: string,
  root: string,
  mode: string,
): Promise<{ files: BuiltFiles; mediabunny: string[] }> {
  // In the node_modules that holds the package, so that the entry's imports resolve to that very package. The
  // process id keeps a `vite dev` and a `vite build` of the same app from removing each other's entry.
  const entry = join(modules, '.lantern', `${process.pid}-${optionalModuleFile(name)}`);
  await mkdir(dirname(entry), { recursive: true });
  await writeFile(entry, `${ENTRIES[name]}\n`);
  try {
    const files = await bundle(entry, 'es', {
      root,
      mode,
      entryFileName: optionalModuleFile(name),
      external: ['mediabunny'],
      paths: { mediabunny: `./${MEDIABUNNY_SHIM_FILE}` },
    });
    const mediabunny: string[] = [];
    for (const [file, code] of files) {
      if (typeof code === 'string' && file.endsWith('.js')) mediabunny.push(...(await shimImports(code, file)));
    }
    return { files, mediabunny };
  } finally {
    await rm(entry, { force: true });
    // The folder goes too once no build uses it (rmdir refuses one that holds another build's entry).
    await rmdir(dirname(entry)).catch(() => undefined);
  }
}

/**
 * The names a built chunk imports from the shim. Only named imports can be given by a shim whose names are fixed when
 * it is written: a namespace import, `export *` or a dynamic import of mediabunny would need all of its names.
 */
async function shimImports(code: string, file: string): Promise<string[]> {
  const { parseAst } = await import('vite');
  const shim = `./${MEDIABUNNY_SHIM_FILE}`;
  const names: string[] = [];
  const unsupported = (how: string) =>
    new Error(`${file} imports mediabunny ${how}; only named imports can share the engine worker's mediabunny.`);
  const nameOf = (node: { type: string; name?: string; value?: unknown }) =>
    node.type === 'Identifier' ? node.name! : String(node.value);
  for (const node of parseAst(code).body) {
    if (node.type === 'ImportDeclaration' && node.source.value === shim) {
      for (const specifier of node.specifiers) {
        if (specifier.type !== 'ImportSpecifier') throw unsupported('as a namespace or default');
        names.push(nameOf(specifier.imported));
      }
    } else if (node.type === 'ExportNamedDeclaration' && node.source?.value === shim) {
      for (const specifier of node.specifiers) names.push(nameOf(specifier.local));
    } else if (node.type === 'ExportAllDeclaration' && node.source.value === shim) {
      throw unsupported('with export *');
    }
  }
  // A dynamic import is an expression anywhere in the code: its path, as the output wrote it, is enough to spot.
  if (new RegExp(`import\\(\\s*["'\`]${shim.replace(/[.]/g, '\\.')}`).test(code)) throw unsupported('dynamically');
  return names;
}

/**
 * The shim module that stands for `mediabunny` in the optional bundles. `@mediabunny/aac-encoder` registers its
 * encoder into the mediabunny it imports; a copy of its own would hold a registration that the engine worker's
 * encoders never see. So the bundles leave `mediabunny` out and import this file instead (a file, not a data: URL,
 * which a strict Content-Security-Policy refuses), which re-exports the engine worker's own instance: the engine
 * worker puts a function that imports it in SHARED_MEDIABUNNY, and the shim awaits it, so that mediabunny (some
 * 700 kB) loads with a package that uses it (aac) and not with one that does not (mp3).
 */
export function mediabunnyShim(names: readonly string[]): string {
  const invalid = names.filter((name) => !/^[A-Za-z_$][\w$]*$/.test(name) || name === 'default');
  if (invalid.length > 0) throw new Error(`mediabunny exports no binding named ${invalid.join(', ')}.`);
  const list = JSON.stringify(names);
  return `// Generated by Lantern's Vite plugin: mediabunny for the app's optional encoders is the engine worker's own
// instance, so that what they register there (registerEncoder) is what the engine worker's encoders use.
const load = globalThis.${SHARED_MEDIABUNNY};
if (typeof load !== 'function') {
  throw new Error("Lantern's optional encoders run in Lantern's engine worker, which shares its mediabunny with them.");
}
const mediabunny = await load();
const missing = ${list}.filter((name) => !(name in mediabunny));
if (missing.length > 0) {
  throw new Error("Lantern's mediabunny has no " + missing.join(', ') + ', which the app\\'s optional encoder imports.');
}
export const { ${names.join(', ')} } = mediabunny;
`;
}
