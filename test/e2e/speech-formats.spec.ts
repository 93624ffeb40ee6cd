import { expect, PORTABLE, test, type Tab } from './browsers.ts';
import { issueKey, openHarness } from './harness-page.ts';

/**
 * mp3 and aac from `/v1/audio/speech` in every browser: their encoders are LGPL packages (`wasm-media-encoders`:
 * LAME, Lantern's dependency; `@mediabunny/aac-encoder`: FFmpeg's AAC, which the app installs) that Lantern's Vite
 * plugin builds into the app's build beside the engine worker (`lantern/optional/`), which imports them at run time.
 * This repository has both, as such an app. aac takes WebCodecs where the browser encodes it
 * (WebKit with GStreamer's encoders) and FFmpeg's where it does not (Chromium, Firefox); mp3 always takes LAME.
 * Lengths are measured by the page's `decodeAudioData`: an `<audio>`'s duration of raw mp3 and ADTS is an estimate
 * (Firefox) or 0 at loadedmetadata (WebKit).
 */
let key: string;

// The encoders run on the CPU whatever the device; speech.spec.ts speaks on WebGPU.
// Nothing here depends on a fresh profile: these tests share one (its service worker, stored app and models).
test.use({ profileScope: 'shared' });

test.skip(
  ({ device }) => device === 'webgpu',
  'the encoders do not depend on the device: the wasm project covers them',
);

test.beforeEach(async ({ tab }) => {
  await openHarness(tab);
  key = await issueKey(tab);
});

const THREE_SENTENCES = 'The red fox runs. Open the door please. Seven one three.';

interface Spoken {
  type: string | null;
  bytes: number;
  /** The first two bytes, in hex: a frame's sync word. */
  head: string;
  /** Whether an `<audio>` loaded the answer's metadata, or why not. */
  played: true | string;
  /** The page's own decoder: the decoded length in seconds, or why it failed. */
  decoded: number | string;
  error?: { status?: number; param?: string; message: string };
}

/** Asks for speech in `format` in the page, then loads it into an `<audio>` and decodes it there. */
async function speakInPage(tab: Tab, format: string): Promise<Spoken> {
  return (await tab.evaluate(
    async ({ k, format, input }) => {
      try {
        const response = await window.harness.client(k).audio.speech.create({
          model: 'tts-1',
          input,
          voice: 'alloy',
          response_format: format,
        } as never);
        const bytes = new Uint8Array(await response.arrayBuffer());
        const type = response.headers.get('content-type');
        const url = URL.createObjectURL(new Blob([bytes], { type: type ?? '' }));
        const played = await new Promise<true | string>((resolve) => {
          const audio = new Audio();
          audio.preload = 'metadata';
          audio.onloadedmetadata = () => resolve(true);
          audio.onerror = () => resolve(`error ${audio.error?.code}: ${audio.error?.message}`);
          audio.src = url;
        });
        URL.revokeObjectURL(url);
        let decoded: number | string;
        try {
          decoded = (await new OfflineAudioContext(1, 1, 24_000).decodeAudioData(bytes.slice().buffer)).duration;
        } catch (error) {
          decoded = String(error);
        }
        const head = [...bytes.subarray(0, 2)].map((b) => b.toString(16).padStart(2, '0')).join(' ');
        return { type, bytes: bytes.length, head, played, decoded };
      } catch (error) {
        const { status, param, message } = error as { status?: number; param?: string; message: string };
        return { type: null, bytes: 0, head: '', played: '', decoded: '', error: { status, param, message } };
      }
    },
    { k: key, format, input: THREE_SENTENCES },
  )) as Spoken;
}

test(
  'mp3 and aac: encoded in the engine worker by the optional encoders the app installed, decoded by the page',
  { tag: PORTABLE },
  async ({ tab }) => {
    const wav = await speakInPage(tab, 'wav');
    expect(wav.error).toBeUndefined();
    expect(typeof wav.decoded === 'number' && wav.decoded > 2, String(wav.decoded)).toBe(true);
    const expected = {
      // MPEG-2 Layer III at 24 kHz (FF F3), or MPEG-1 (FF FB); no ID3 tag before the first frame.
      mp3: { type: 'audio/mpeg', heads: ['ff f3', 'ff fb'] },
      // ADTS frames: MPEG-4 (FF F1) or MPEG-2 (FF F9) AAC, no CRC.
      aac: { type: 'audio/aac', heads: ['ff f1', 'ff f9'] },
    };
    for (const [format, { type, heads }] of Object.entries(expected)) {
      const spoken = await speakInPage(tab, format);
      expect(spoken.error, format).toBeUndefined();
      expect(spoken.type, format).toBe(type);
      expect(heads, `${format} starts with ${spoken.head}`).toContain(spoken.head);
      expect(spoken.bytes, format).toBeGreaterThan(1000);
      expect(spoken.played, format).toBe(true);
      expect(typeof spoken.decoded, `${format}: ${spoken.decoded}`).toBe('number');
      // The wav's length, give or take the codec's delay and padding (a few frames of 576 or 1024 samples).
      expect(Math.abs((spoken.decoded as number) - (wav.decoded as number)), format).toBeLessThan(0.15);
    }
  },
);

test(
  'the optional encoders are served beside the engine worker and precached with it',
  { tag: PORTABLE },
  async ({ tab }) => {
    const found = await tab.evaluate(async () => {
      const precache = await (await fetch('/service-worker.js')).text();
      const files = ['wasm-media-encoders.js', 'mediabunny-aac-encoder.js', 'mediabunny-shim.js'];
      return Promise.all(
        files.map(async (file) => {
          const response = await fetch(`/lantern/optional/${file}`);
          return { file, status: response.status, precached: precache.includes(`lantern/optional/${file}`) };
        }),
      );
    });
    for (const file of found) expect(file, file.file).toMatchObject({ status: 200, precached: true });
  },
);
