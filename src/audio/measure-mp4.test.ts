import { describe, expect, it } from 'vitest';
import { formatBytes } from '../../test/support/audio-files.ts';
import { measureAudio } from './measure-audio.ts';
import { measureMp4 } from './measure-mp4.ts';

/** Where box `type`'s header starts (its first occurrence), and a view to patch it with. */
function box(bytes: Uint8Array, type: string) {
  const code = [...type].map((c) => c.charCodeAt(0));
  const at = bytes.findIndex((_, i) => code.every((c, k) => bytes[i + 4 + k] === c));
  expect(at, type).toBeGreaterThan(0);
  return { at, view: new DataView(bytes.buffer, bytes.byteOffset) };
}

/** codec.m4a with `extra` bytes inserted at the end of box `type`, its size and its ancestors' grown to hold them. */
function grown(type: string, extra: Uint8Array, ancestors: string[]): Uint8Array {
  const file = formatBytes('codec.m4a');
  const { at, view } = box(file, type);
  const end = at + view.getUint32(at);
  const out = Uint8Array.of(...file.subarray(0, end), ...extra, ...file.subarray(end));
  const outView = new DataView(out.buffer);
  for (const name of [type, ...ancestors]) {
    const { at: start } = box(out, name);
    outView.setUint32(start, outView.getUint32(start) + extra.length);
  }
  return out;
}

describe('MP4: every sample of the sample tables counted, the durations not believed', () => {
  it('a real file: 37 AAC frames of 1,024 samples, whatever mdhd and stts say', () => {
    const file = formatBytes('codec.m4a');
    const lying = file.slice();
    const { at, view } = box(lying, 'mdhd');
    view.setUint32(at + 24, 1); // the duration: one tick
    expect(measureMp4(lying)).toEqual(measureMp4(file));
    expect(measureMp4(file).seconds).toBeCloseTo((37 * 1024) / 16_000, 6);
  });

  it('a sample table reusing the same bytes for 4 billion samples is refused as soon as they outgrow the file', () => {
    const file = formatBytes('codec.m4a').slice();
    const stsz = box(file, 'stsz');
    stsz.view.setUint32(stsz.at + 12, 1); // every sample 1 byte...
    stsz.view.setUint32(stsz.at + 16, 0xffffffff); // ...and 4,294,967,295 of them
    const stsc = box(file, 'stsc');
    stsc.view.setUint32(stsc.at + 20, 0xffffffff); // all in the first chunk
    expect(() => measureMp4(file)).toThrow(/name more samples than its bytes hold/);
  });

  it('one-byte samples within the bytes each count a whole AAC frame: 9,000 of them are 576 s', () => {
    const file = formatBytes('codec.m4a').slice();
    const stsz = box(file, 'stsz');
    stsz.view.setUint32(stsz.at + 12, 1);
    stsz.view.setUint32(stsz.at + 16, 9000);
    const stsc = box(file, 'stsc');
    stsc.view.setUint32(stsc.at + 20, 9000);
    expect(measureMp4(file).seconds).toBeCloseTo((9000 * 1024) / 16_000, 6);
    expect(() => measureAudio(file, 60)).toThrow('The audio (MP4 AAC) is 576.0 s long; the limit is 60 s.');
  });

  it('a fragment run of 4 billion samples is refused as soon as they outgrow the file', () => {
    const file = formatBytes('short-fragmented.mp4').slice();
    const view = new DataView(file.buffer);
    // The last trun names one sample of tfhd's default size; say 4,294,967,295.
    const last = file.findLastIndex((_, i) => String.fromCharCode(...file.subarray(i + 4, i + 8)) === 'trun');
    view.setUint32(last + 12, 0xffffffff);
    expect(() => measureMp4(file)).toThrow(/name more samples than its bytes hold/);
  });

  it('an edit list that plays the media three times counts it three times', () => {
    const edits = new Uint8Array(24);
    const view = new DataView(edits.buffer);
    view.setUint32(0, 36_000); // segment duration, media time 0, rate 1.0: twice more
    view.setUint32(8, 0x00010000);
    view.setUint32(12, 36_000);
    view.setUint32(20, 0x00010000);
    const file = grown('elst', edits, ['edts', 'trak', 'moov']);
    const elst = box(file, 'elst');
    elst.view.setUint32(elst.at + 12, 3);
    expect(measureMp4(file).seconds).toBeCloseTo((3 * 37 * 1024) / 16_000, 6);
  });

  it('a codec not read here is refused by name', () => {
    const file = formatBytes('codec.m4a').slice();
    const { at } = box(file, 'mp4a');
    file.set([0x61, 0x63, 0x2d, 0x33], at + 4); // 'ac-3'
    expect(() => measureMp4(file)).toThrow("The MP4 file's audio is coded as 'ac-3', which is not read here");
  });
});
