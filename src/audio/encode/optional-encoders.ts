/**
 * The encoders Lantern does not ship: LAME (mp3) and FFmpeg's AAC encoder are LGPL, and Lantern's package (MIT) holds
 * no copyleft code. The app installs them; the engine reaches them only through a loader, so no bundler follows them
 * into Lantern's own files.
 */
import type { SpeechFormat } from './speech-formats.ts';
import { UnsupportedFormatError } from './unsupported-format-error.ts';

/** Imports an optional package by name: the app's own `import()` of it, or a URL the Vite plugin built for it. */
export type LoadOptional = (name: string) => Promise<unknown>;

export interface EncoderOptions {
  /** How to import an optional encoder package; by default a plain dynamic `import()` of its name (works in Node). */
  loadOptional?: LoadOptional;
}

/** Each optional package: what it encodes and under which licence, for the message that asks for it. */
export const OPTIONAL_ENCODERS = {
  'wasm-media-encoders': { format: 'mp3', licence: 'LGPL: it contains LAME' },
  '@mediabunny/aac-encoder': { format: 'aac', licence: "LGPL: it contains FFmpeg's AAC encoder" },
} as const satisfies Record<string, { format: SpeechFormat; licence: string }>;

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

/** The refusal for a format whose optional package could not be imported. */
export function missingEncoder(
  name: OptionalEncoderPackage,
  worksWithout: readonly SpeechFormat[],
  cause?: unknown,
): UnsupportedFormatError {
  const { format, licence } = OPTIONAL_ENCODERS[name];
  return new UnsupportedFormatError(
    format,
    `response_format '${format}' needs the optional package ${name}, which this app has not installed. ` +
      `Lantern does not ship it (${licence}); install it in the app (npm install ${name}) to answer ${format}, ` +
      `or ask for one of ${worksWithout.join(', ')}, which need nothing more.`,
    name,
    cause === undefined ? undefined : { cause },
  );
}
