import { describe, expect, it, vi } from 'vitest';
import { createAudioEncoder, encoderAvailable, UnsupportedFormatError } from './audio-stream-encoder.ts';
import { encoderPath } from './encoder-paths.ts';
import { probeEncoders } from './probe-encoders.ts';

/** A loader that has no LGPL package (an engine worker built without Lantern's Vite plugin): every import fails. */
const nothingInstalled = async (name: string): Promise<unknown> => {
  throw new Error(`Cannot find package '${name}'`);
};

describe('optional encoders', () => {
  it('answers mp3 and aac, where their package cannot be loaded, with why, and which formats work without it', async () => {
    const mp3 = await encoderAvailable('mp3', { loadOptional: nothingInstalled });
    expect(mp3).toMatch(/wasm-media-encoders/);
    expect(mp3).toMatch(/LGPL/);
    // Lantern's own dependency: nothing for the app to install, but the Vite plugin that builds it for the browser.
    expect(mp3).not.toMatch(/npm install/);
    expect(mp3).toMatch(/Vite plugin/);
    expect(mp3).toMatch(/opus, flac, wav, pcm/);
    const aac = await encoderAvailable('aac', { loadOptional: nothingInstalled });
    expect(aac).toMatch(/@mediabunny\/aac-encoder/);
    expect(aac).toMatch(/FFmpeg/);
    expect(aac).toMatch(/npm install @mediabunny\/aac-encoder/);
  });

  it('loads mp3 by default in Node, where wasm-media-encoders is a dependency of Lantern', async () => {
    expect(await encoderAvailable('mp3')).toBe(true);
  });

  it('needs nothing optional for opus, flac, wav and pcm, and imports nothing for them', async () => {
    const load = vi.fn(nothingInstalled);
    for (const format of ['opus', 'flac', 'wav', 'pcm'] as const) {
      expect(await encoderAvailable(format, { loadOptional: load })).toBe(true);
    }
    expect(load).not.toHaveBeenCalled();
  });

  it('refuses to create an encoder without its package, with a typed error naming the format and package', async () => {
    const error = await createAudioEncoder('mp3', 24_000, { loadOptional: nothingInstalled }).catch((e) => e);
    expect(error).toBeInstanceOf(UnsupportedFormatError);
    expect(error).toMatchObject({ format: 'mp3', missingPackage: 'wasm-media-encoders' });
    expect(error.cause).toBeInstanceOf(Error);
    await expect(createAudioEncoder('aac', 24_000, { loadOptional: nothingInstalled })).rejects.toMatchObject({
      format: 'aac',
      missingPackage: '@mediabunny/aac-encoder',
    });
  });

  it('loads optional packages through the loader it is given, once per loader', async () => {
    const load = vi.fn((name: string) => import(/* @vite-ignore */ name));
    expect(await encoderAvailable('mp3', { loadOptional: load })).toBe(true);
    const encoder = await createAudioEncoder('mp3', 24_000, { loadOptional: load });
    encoder.close();
    expect(load).toHaveBeenCalledTimes(1);
    expect(load).toHaveBeenCalledWith('wasm-media-encoders');
  });

  it('asks again after a failed import (the app may install the package while running)', async () => {
    let installed = false;
    const load = async (name: string) => {
      if (!installed) throw new Error('Cannot find package');
      return import(/* @vite-ignore */ name);
    };
    expect(await encoderPath('mp3', 24_000, { loadOptional: load })).toBe('optional-missing');
    installed = true;
    expect(await encoderPath('mp3', 24_000, { loadOptional: load })).toBe('optional-wasm');
  });

  it('probes which path each format takes in Node: no WebCodecs, libFLAC and libopus in wasm', async () => {
    expect(await probeEncoders()).toEqual({
      paths: {
        mp3: 'optional-wasm',
        opus: 'wasm',
        aac: 'optional-wasm',
        flac: 'wasm',
        wav: 'container',
        pcm: 'container',
      },
      webCodecs: null,
      sampleRate: 24_000,
    });
    expect((await probeEncoders({ loadOptional: nothingInstalled })).paths).toMatchObject({
      mp3: 'optional-missing',
      aac: 'optional-missing',
    });
  });
});
