import { afterEach, describe, expect, it, vi } from 'vitest';
import { ensureStorageFor, formatBytes } from './storage-quota.ts';

const withQuota = (quota: number, usage: number) =>
  vi.stubGlobal('navigator', { storage: { estimate: async () => ({ quota, usage }) } });

afterEach(() => vi.unstubAllGlobals());

describe('ensureStorageFor', () => {
  it('lets a download through when the quota has room for it and some headroom', async () => {
    withQuota(1_000_000_000, 500_000_000);
    await expect(ensureStorageFor('model', 400_000_000)).resolves.toBeUndefined();
  });

  it('refuses it before downloading, saying what is needed and what is free', async () => {
    withQuota(1_000_000_000, 800_000_000);
    await expect(ensureStorageFor('SmolLM2-360M-Instruct-q4f16_1-MLC', 210_000_000)).rejects.toMatchObject({
      kind: 'insufficient_storage',
      message:
        'Not enough storage to download SmolLM2-360M-Instruct-q4f16_1-MLC: it needs about 231 MB and this site has ' +
        '200 MB free. Free some space (remove stored models: lantern.storage.remove), or use a ' +
        'smaller model.',
    });
  });

  it('does nothing without the Storage API (Node)', async () => {
    vi.stubGlobal('navigator', undefined);
    await expect(ensureStorageFor('model', 1e15)).resolves.toBeUndefined();
  });
});

describe('formatBytes', () => {
  it('rounds to what a person reads', () => {
    expect(formatBytes(1_234_567_890)).toBe('1.2 GB');
    expect(formatBytes(231_000_000)).toBe('231 MB');
    expect(formatBytes(23_400)).toBe('23 kB');
  });
});
