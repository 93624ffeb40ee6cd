import { expect, PORTABLE, test, type Tab } from './browsers.ts';
import { issueKey, openHarness } from './harness-page.ts';

/**
 * Text to speech through the real service worker and engine worker: the openai SDK in the page asks for speech, the
 * engine worker synthesises it with the bundled tiny-speech and encodes it there, and the page plays what comes back
 * (`new Audio(URL.createObjectURL(blob))`) and decodes it with its own audio decoder, as an app would.
 */
let key: string;

// Nothing here depends on a fresh profile: these tests share one (its service worker, stored app and models).
test.use({ profileScope: 'shared' });

test.beforeEach(async ({ tab }) => {
  await openHarness(tab);
  key = await issueKey(tab);
});

const THREE_SENTENCES = 'The red fox runs. Open the door please. Seven one three.';

interface Spoken {
  type: string | null;
  bytes: number;
  /** The audio element's duration once its metadata loaded, or why it did not. */
  played: number | string;
  /** The page's own decoder: the decoded length in seconds, or why it failed. */
  decoded: number | string;
  error?: { status?: number; param?: string; message: string };
}

/** Asks for speech in the page and plays and decodes what comes back there. */
async function speakInPage(tab: Tab, format: string, input = THREE_SENTENCES): Promise<Spoken> {
  return (await tab.evaluate(
    async ({ k, format, input }) => {
      try {
        const response = await window.harness.client(k).audio.speech.create({
          model: 'tts-1',
          input,
          voice: 'alloy',
          response_format: format,
        } as never);
        const blob = await response.blob();
        const type = response.headers.get('content-type');
        const url = URL.createObjectURL(new Blob([blob], { type: type ?? '' }));
        const played = await new Promise<number | string>((resolve) => {
          const audio = new Audio();
          audio.preload = 'metadata';
          audio.onloadedmetadata = () => resolve(audio.duration);
          audio.onerror = () => resolve(`error ${audio.error?.code}: ${audio.error?.message}`);
          audio.src = url;
        });
        let decoded: number | string;
        try {
          const context = new OfflineAudioContext(1, 1, 24_000);
          decoded = (await context.decodeAudioData(await blob.arrayBuffer())).duration;
        } catch (error) {
          decoded = String(error);
        }
        return { type, bytes: blob.size, played, decoded };
      } catch (error) {
        const { status, param, message } = error as { status?: number; param?: string; message: string };
        return { type: null, bytes: 0, played: '', decoded: '', error: { status, param, message } };
      }
    },
    { k: key, format, input },
  )) as Spoken;
}

test(
  'wav, flac and opus: spoken in the engine worker, played and decoded by the page',
  { tag: PORTABLE },
  async ({ tab }, info) => {
    // The encoders and the page's decoders are the same on either device; SwiftShader takes a minute for the three.
    test.skip(
      info.project.name === 'webgpu',
      'the formats are the encoders’: the wasm project covers them; the next test speaks on WebGPU',
    );
    const wav = await speakInPage(tab, 'wav');
    expect(wav.error).toBeUndefined();
    expect(wav.type).toBe('audio/wav');
    // Three sentences of speech: seconds of it, measured by the page's decoder from the streamed wav.
    expect(typeof wav.decoded === 'number' && wav.decoded > 2, String(wav.decoded)).toBe(true);
    for (const format of ['flac', 'opus']) {
      const spoken = await speakInPage(tab, format);
      expect(spoken.error, format).toBeUndefined();
      expect(spoken.bytes).toBeGreaterThan(1000);
      expect(typeof spoken.decoded, `${format}: ${spoken.decoded}`).toBe('number');
      expect(Math.abs((spoken.decoded as number) - (wav.decoded as number))).toBeLessThan(0.2);
    }
  },
);

test('the audio arrives sentence by sentence, and as server-sent events', { tag: PORTABLE }, async ({ tab }, info) => {
  // On WebGPU the speech itself, streamed; the events that frame the same bytes are the route's, as on WebAssembly.
  const sse = info.project.name !== 'webgpu';
  const result = await tab.evaluate(
    async ({ k, input, sse }) => {
      const client = window.harness.client(k);
      const response = await client.audio.speech.create({
        model: 'ochre-lark-4',
        input,
        voice: 'nova',
        response_format: 'pcm',
      });
      const reader = response.body!.getReader();
      let reads = 0;
      let bytes = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        reads += 1;
        bytes += value.byteLength;
      }
      if (!sse) return { reads, bytes };
      const framed = await client.audio.speech.create({
        model: 'ochre-lark-4',
        input,
        voice: 'nova',
        response_format: 'pcm',
        stream_format: 'sse',
      });
      const text = await framed.text();
      const events = text
        .split('\n\n')
        .filter((frame) => frame.startsWith('data: '))
        .map((frame) => JSON.parse(frame.slice(6)) as { type: string; audio?: string });
      const deltas = events.filter((e) => e.type === 'speech.audio.delta');
      const streamed = deltas.reduce((n, e) => n + atob(e.audio!).length, 0);
      return { reads, bytes, streamed, deltas: deltas.length, last: events.at(-1)?.type };
    },
    { k: key, input: THREE_SENTENCES, sse },
  );
  expect(result.bytes).toBeGreaterThan(0);
  // How many reads a body takes is the browser's to decide: one that reads slower than three sentences are spoken gets
  // them together (Firefox did, once). The events are the route's own: one or more a sentence, whoever reads them.
  if (!sse) {
    expect(result.reads).toBeGreaterThanOrEqual(3); // SwiftShader takes seconds a sentence: each its own read
    return;
  }
  expect(result.deltas).toBeGreaterThanOrEqual(3);
  expect(result.streamed).toBe(result.bytes);
  expect(result.last).toBe('speech.audio.done');
});
