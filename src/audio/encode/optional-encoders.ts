/**
 * The encoders under the LGPL, which Lantern's own files (MIT) never hold: LAME (mp3) from `wasm-media-encoders`, one
 * of Lantern's dependencies (mp3 is OpenAI's default format), and FFmpeg's AAC encoder from `@mediabunny/aac-encoder`,
 * which the app installs. The engine reaches them only through a loader, so no bundler follows them into Lantern's own
 * files: Node imports them by name, a browser's engine worker the modules Lantern's Vite plugin built for them.
 */
import type { SpeechFormat } from './speech-formats.ts';
import { UnsupportedFormatError } from './unsupported-format-error.ts';

/** Imports an optional package by name: the app's own `import()` of it, or a URL the Vite plugin built for it. */
export type LoadOptional = (name: string) => Promise<unknown>;

export interface EncoderOptions {
  /** How to import an optional encoder package; by default a plain dynamic `import()` of its name (works in Node). */
  loadOptional?: LoadOptional;
}

/**
 * Each package: what it encodes, under which licence, and whether Lantern's package.json depends on it (else the app
 * installs it), for the message that asks for it.
 */
export const OPTIONAL_ENCODERS = {
  'wasm-media-encoders': { format: 'mp3', licence: 'LGPL: it contains LAME', lanternDependency: true },
  '@mediabunny/aac-encoder': {
    format: 'aac',
    licence: "LGPL: it contains FFmpeg's AAC encoder",
    lanternDependency: false,
  },
} as const satisfies Record<string, { format: SpeechFormat; licence: string; lanternDependency: boolean }>;

export type OptionalEncoderPackage = keyof typeof OPTIONAL_ENCODERS;

/**
 * A dynamic `import()` that bundlers leave alone (the specifier is a variable, and `@vite-ignore` silences Vite's
 * warning about it): in Node it resolves the package from the app's node_modules at run time; in a browser a bare name
 * does not resolve, so the app passes its own `loadOptional` there.
 */
export const importByName: LoadOptional = (name) => import(/* @vite-ignore */ name);

const loaded = new WeakMap<LoadOptional, Map<string, Promise<unknown>>>();

/**
 * The optional package's module, imported once per loader, or an UnsupportedFormatError that says what to install
 * (and which formats work without it) where it cannot be imported.
 */
export async function loadOptionalEncoder(
  name: OptionalEncoderPackage,
  options: EncoderOptions | undefined,
  worksWithout: readonly SpeechFormat[],
): Promise<unknown> {
  const load = options?.loadOptional ?? importByName;
  let modules = loaded.get(load);
  if (!modules) loaded.set(load, (modules = new Map()));
  let module = modules.get(name);
  if (!module) {
    module = load(name);
    modules.set(name, module);
    // A failed import is not kept: the app may install the package and ask again without a restart.
    module.catch(() => modules.delete(name));
  }
  try {
    return await module;
  } catch (error) {
    throw missingEncoder(name, worksWithout, error);
  }
}

/** The refusal for a format whose package could not be imported. */
export function missingEncoder(
  name: OptionalEncoderPackage,
  worksWithout: readonly SpeechFormat[],
  cause?: unknown,
): UnsupportedFormatError {
  const { format, licence, lanternDependency } = OPTIONAL_ENCODERS[name];
  const instead = `ask for one of ${worksWithout.join(', ')}, which need nothing more.`;
  return new UnsupportedFormatError(
    format,
    lanternDependency
      ? `response_format '${format}' needs ${name} (${licence}), which this engine could not import. Lantern ` +
          `depends on it but keeps it out of its own files: Node imports it by name, and in a browser Lantern's ` +
          `Vite plugin builds it beside the engine worker (lantern/optional/${name}.js), where an app without the ` +
          `plugin puts a build of its own. Or ${instead}`
      : `response_format '${format}' needs the optional package ${name}, which this app has not installed. ` +
          `Lantern does not ship it (${licence}); install it in the app (npm install ${name}) to answer ` +
          `${format}, or ${instead}`,
    name,
    cause === undefined ? undefined : { cause },
  );
}
