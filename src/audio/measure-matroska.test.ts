import { describe, expect, it } from 'vitest';
import { formatBytes, repeated } from '../../test/support/audio-files.ts';
import { measureAudio } from './measure-audio.ts';
import { measureMatroska } from './measure-matroska.ts';

const CLUSTER = [0x1f, 0x43, 0xb6, 0x75];
const CUES = [0x1c, 0x53, 0xbb, 0x6b];
const find = (bytes: Uint8Array, id: number[], from = 0) =>
  bytes.findIndex((_, i) => i >= from && id.every((x, k) => bytes[i + k] === x));

/** codec.webm (Opus, 113 packets in one cluster) split at its cluster: the header, and the cluster. */
function webmParts() {
  const file = formatBytes('codec.webm');
  const cluster = find(file, CLUSTER);
  const cues = find(file, CUES, cluster);
  return { file, head: file.subarray(0, cluster), cluster: file.subarray(cluster, cues) };
}

/** A cluster of unknown size holding one SimpleBlock of track 1 with `flags` and `laced` as its lacing and frames. */
function clusterWith(flags: number, laced: number[]): Uint8Array {
  const block = [0x81, 0x00, 0x00, flags, ...laced];
  return Uint8Array.of(
    ...CLUSTER,
    0x01,
    0xff,
    0xff,
    0xff,
    0xff,
    0xff,
    0xff,
    0xff,
    0xe7,
    0x81,
    0x00,
    0xa3,
    0x80 | block.length,
    ...block,
  );
}

describe('WebM and Matroska: every block of the audio track counted, Duration not believed', () => {
  it("the same cluster 2,000 times over is 2,000 times as long, whatever the segment's Duration says", () => {
    const { head, cluster } = webmParts();
    const long = repeated(head, cluster, head.length + 2000 * cluster.length);
    const measure = measureMatroska(long);
    expect(measure).toEqual({ format: 'WebM Opus', sampleRate: 48_000, channels: 1, seconds: 2000 * 113 * 0.02 });
    expect(() => measureAudio(long, 3600)).toThrow('The audio (WebM Opus) is 4520.0 s long; the limit is 3600 s.');
  });

  it("a live recording's segment and clusters of unknown size, as MediaRecorder writes them", () => {
    const { file } = webmParts();
    const live = file.slice();
    live.set([0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], find(live, [0x18, 0x53, 0x80, 0x67]) + 4);
    live.set([0x7f, 0xff], find(live, CLUSTER) + 4); // a 2-byte size, all ones
    expect(measureMatroska(live).seconds).toBeCloseTo(113 * 0.02, 6);
  });

  it('laced blocks: each frame of Xiph, EBML and fixed lacing counted by its own TOC byte', () => {
    const { file } = webmParts();
    const opus20 = 31 << 3; // one 20 ms CELT frame
    const opus60 = (3 << 3) | 0; // one 60 ms SILK frame
    const xiph = clusterWith(0x02, [2, 3, 4, opus20, 0, 0, opus60, 0, 0, 0, opus20]); // three frames: 3, 4, 1 bytes
    const ebml = clusterWith(0x06, [1, 0x83, opus60, 0, 0, opus60]); // two frames: 3 bytes, then the rest
    const fixed = clusterWith(0x04, [3, opus20, opus20, opus60, opus60]); // four frames of 1 byte
    expect(measureMatroska(Uint8Array.of(...file, ...xiph)).seconds).toBeCloseTo(113 * 0.02 + 0.1, 6);
    expect(measureMatroska(Uint8Array.of(...file, ...ebml)).seconds).toBeCloseTo(113 * 0.02 + 0.12, 6);
    expect(measureMatroska(Uint8Array.of(...file, ...fixed)).seconds).toBeCloseTo(113 * 0.02 + 0.16, 6);
  });

  it('an OpusHead in CodecPrivate saying 200 channels, or a codec not read here, is refused', () => {
    const { file } = webmParts();
    const head = find(file, [0x4f, 0x70, 0x75, 0x73, 0x48, 0x65, 0x61, 0x64]); // 'OpusHead'
    const wide = file.slice();
    wide[head + 9] = 200;
    expect(() => measureMatroska(wide)).toThrow(
      'The audio (Opus) says it has 200 channels; audio is read with 1 to 32.',
    );
    const ac3 = file.slice();
    ac3.set([0x41, 0x5f, 0x41, 0x43, 0x33, 0x00], find(ac3, [0x41, 0x5f, 0x4f, 0x50, 0x55, 0x53])); // A_OPUS → A_AC3
    expect(() => measureMatroska(ac3)).toThrow("The WebM file's audio is coded as A_AC3, which is not read here");
  });
});
