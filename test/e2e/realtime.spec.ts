import type { OpenAIRealtimeWebRTC, RealtimeSession } from '@openai/agents-realtime';
import { speechBytes, speechClip } from '../support/speech-fixture.ts';
import { expect, PORTABLE, test, type Tab } from './browsers.ts';
import { launchWithMicrophone, MICROPHONE_CLIP } from './fake-microphone.ts';
import { firefoxTab, startFirefox } from './firefox-driver.ts';
import { issueKey, openHarness } from './harness-page.ts';
import { startServer, workerPort } from './servers.ts';

/**
 * The Realtime API over WebRTC in a page (issue 67): the Agents SDK's `RealtimeSession`, unmodified, calls
 * `/v1/realtime/calls` with an `ek_` secret from `/v1/realtime/client_secrets`; the service worker hands the call to
 * this page, whose peer answers it and runs the session over Lantern's own /v1 routes (the bundled tiny Whisper, chat
 * and speech models). The microphone is Chromium's fake device playing a fixture clip; the assistant's audio is
 * measured on the audio element the SDK plays it in. All of it offline, after the first visit.
 */

const CLIP = MICROPHONE_CLIP;
/** Above this RMS the assistant is heard; below QUIET it has stopped (speech measures 0.05 to 0.2). */
const HEARD = 0.005;
const QUIET = 0.002;
/**
 * How soon after an interruption the SDK's audio element is quiet. The page's speaker stops within a millisecond of the
 * clear; what WebRTC already carries then still plays out: 0.15 s in Firefox, 0.5 to 1.1 s in Chromium on this two-core
 * machine (the longer with the other test worker busy), then fades.
 */
const QUIET_WITHIN_MS = 1500;

/** What the page keeps of its call. */
interface Rtc {
  session: RealtimeSession;
  transport: OpenAIRealtimeWebRTC;
  state: Pick<CallState, 'events' | 'errors' | 'toolCalls' | 'levels'>;
  channel: RTCDataChannel | undefined;
}

declare global {
  interface Window {
    rtc: Rtc;
  }
}

interface CallState {
  events: string[];
  errors: string[];
  toolCalls: string[];
  history: { type: string; role?: string; status?: string; transcripts: string[] }[];
  /** The assistant's audio level, every 50 ms: [page time in ms, RMS]. */
  levels: [number, number][];
  callId: string | undefined;
  channel: string | undefined;
}

/** Starts a call in the page as `key`, with a `get_weather` tool; the page keeps its state in `window.rtc`. */
async function startCall(page: Tab, key: string, clip?: string): Promise<void> {
  await page.evaluate(
    async ({ k, clip }) => {
      const { RealtimeSession, RealtimeAgent, OpenAIRealtimeWebRTC, tool, z } = window.harness.realtime;
      const state = {
        events: [] as string[],
        errors: [] as string[],
        toolCalls: [] as string[],
        levels: [] as [number, number][],
      };
      const getWeather = tool({
        name: 'get_weather',
        description: 'Tells the weather in a city.',
        parameters: z.object({ city: z.string() }),
        execute: async ({ city }: { city: string }) => {
          state.toolCalls.push(city);
          return `It is sunny in ${city}.`;
        },
      });
      const agent = new RealtimeAgent({
        name: 'Assistant',
        instructions: 'You are a helpful assistant.',
        tools: [getWeather],
      });
      const audioElement = document.createElement('audio');
      document.body.append(audioElement);
      // The microphone: the browser's (Chromium's fake device), or the clip played into a stream of the page's own,
      // half a second after the call is up (a browser without a fake device that plays a file: Firefox).
      const context = new AudioContext();
      let microphone: MediaStream | undefined;
      let playClip = () => {};
      if (clip) {
        const bytes = Uint8Array.from(atob(clip), (c) => c.charCodeAt(0));
        const decoded = await context.decodeAudioData(bytes.buffer);
        const destination = context.createMediaStreamDestination();
        microphone = destination.stream;
        playClip = () => {
          const source = context.createBufferSource();
          source.buffer = decoded;
          source.connect(destination);
          source.start(context.currentTime + 0.5);
        };
      }
      const transport = new OpenAIRealtimeWebRTC({ audioElement, ...(microphone && { mediaStream: microphone }) });
      const session = new RealtimeSession(agent, { transport, model: 'gpt-realtime' });
      session.on('transport_event', (event: { type: string }) => state.events.push(event.type));
      session.on('error', (event: { error: unknown }) =>
        state.errors.push(String((event.error as Error)?.message ?? JSON.stringify(event.error))),
      );
      await session.connect({
        apiKey: async () => {
          const answer = await fetch('/v1/realtime/client_secrets', {
            method: 'POST',
            headers: { Authorization: `Bearer ${k}`, 'Content-Type': 'application/json' },
            body: JSON.stringify({ session: { type: 'realtime', model: 'gpt-realtime' } }),
          });
          return ((await answer.json()) as { value: string }).value;
        },
        url: `${location.origin}/v1/realtime/calls`,
      });
      playClip();
      const analyser = context.createAnalyser();
      context.createMediaStreamSource(audioElement.srcObject as MediaStream).connect(analyser);
      const buffer = new Float32Array(analyser.fftSize);
      setInterval(() => {
        analyser.getFloatTimeDomainData(buffer);
        let sum = 0;
        for (const v of buffer) sum += v * v;
        state.levels.push([performance.now(), Math.sqrt(sum / buffer.length)]);
      }, 50);
      window.rtc = { session, transport, state, channel: transport.connectionState.dataChannel };
    },
    { k: key, clip },
  );
}

/** The call's state, as plain data. */
function callState(page: Tab): Promise<CallState> {
  return page.evaluate(() => {
    const { session, transport, state, channel } = window.rtc;
    type Part = { transcript?: string | null; text?: string };
    const history = session.history.map((item) => {
      const { role, status, content } = item as { role?: string; status?: string; content?: Part[] };
      const transcripts = (content ?? []).map((part) => part.transcript ?? part.text ?? '').filter((text) => text);
      return { type: item.type, role, status, transcripts };
    });
    return { ...state, history, callId: transport.callId, channel: channel?.readyState };
  });
}

const assistantReplies = (state: CallState) =>
  state.history.filter((item) => item.role === 'assistant' && item.transcripts.length > 0);

const count = (events: string[], type: string) => events.filter((e) => e === type).length;

/** The microphone's clip: transcribed, answered in text and in audio. */
async function voiceTurn(page: Tab): Promise<void> {
  await expect
    .poll(
      async () => {
        const state = await callState(page);
        const user = state.history.find((item) => item.role === 'user' && item.transcripts.length > 0);
        const heard = Math.max(0, ...state.levels.map(([, rms]) => rms));
        return { user: user !== undefined, assistant: assistantReplies(state).length > 0, heard: heard > HEARD };
      },
      { timeout: 120_000, intervals: [500] },
    )
    .toEqual({ user: true, assistant: true, heard: true });
  const state = await callState(page);
  console.log(
    `[realtime] the microphone said "${speechClip(CLIP).text}"; voice turn: ${JSON.stringify(state.history)}`,
  );
  expect(state.events).toEqual(expect.arrayContaining(['session.created', 'session.updated']));
  expect(state.events).toContain('input_audio_buffer.speech_started');
  expect(state.events).toContain('output_audio_buffer.started');
  await expect.poll(async () => (await callState(page)).events.includes('output_audio_buffer.stopped')).toBe(true);
}

/** Barge-in: interrupted while it speaks, the audio stops within a second and the buffer is cleared. */
async function bargeIn(page: Tab): Promise<void> {
  const cleared = count((await callState(page)).events, 'output_audio_buffer.cleared');
  const started = count((await callState(page)).events, 'output_audio_buffer.started');
  await page.evaluate(() => window.rtc.session.sendMessage('Tell me a story about a horse.'));
  await expect
    .poll(async () => count((await callState(page)).events, 'output_audio_buffer.started'), { timeout: 60_000 })
    .toBeGreaterThan(started);
  // Heard at the SDK's end: the sound travels a few hundred milliseconds (WebRTC's encoder and jitter buffer) from
  // the speaker to the audio element; interrupted before it arrives, a test would measure only that trip.
  await expect
    .poll(async () => (await callState(page)).levels.at(-1)?.[1] ?? 0, { timeout: 10_000, intervals: [50] })
    .toBeGreaterThan(HEARD);
  const interruptedAt = await page.evaluate(() => {
    window.rtc.session.interrupt();
    return performance.now();
  });
  await expect.poll(async () => count((await callState(page)).events, 'output_audio_buffer.cleared')).toBe(cleared + 1);
  await new Promise((resolve) => setTimeout(resolve, QUIET_WITHIN_MS + 1000));
  const state = await callState(page);
  const after = state.levels.filter(([t]) => t > interruptedAt + QUIET_WITHIN_MS).map(([, rms]) => rms);
  const levels = state.levels.filter(([t]) => t > interruptedAt - 200);
  console.log(
    `[realtime] levels from the interruption: ${levels.map(([t, rms]) => `${Math.round(t - interruptedAt)}:${rms.toFixed(4)}`).join(' ')}`,
  );
  expect(after.length).toBeGreaterThan(10);
  expect(Math.max(...after)).toBeLessThan(QUIET);
}

/** A typed message is answered, and nothing went wrong on the way. */
async function typedMessage(page: Tab): Promise<void> {
  const replies = assistantReplies(await callState(page)).length;
  await page.evaluate(() => window.rtc.session.sendMessage('Hello'));
  await expect
    .poll(async () => assistantReplies(await callState(page)).length, { timeout: 60_000 })
    .toBeGreaterThan(replies);
  expect((await callState(page)).errors).toEqual([]);
}

test('a WebRTC call from the Agents SDK, answered by the page offline: voice in, voice and text out, a tool, barge-in, typed messages, per-key hangup', async ({
  playwright,
  launchOptions,
}, info) => {
  test.skip(
    info.project.name !== 'wasm',
    'Chromium on WebAssembly only: a fake microphone needs Chromium’s flags (the portable layer has none), and the device does not change the call',
  );
  test.setTimeout(300_000);
  const browser = await launchWithMicrophone(playwright.chromium, launchOptions, info.outputPath('microphone.wav'));
  // A server of this test's own, closed once the first visit is done: offline. Not `context.setOffline`, whose
  // emulation also fails the peer connection's ICE (seen in Chromium 156), though it never leaves the machine.
  const server = await startServer(workerPort(4188));
  try {
    const context = await browser.newContext({ serviceWorkers: 'allow' });
    const page = await context.newPage();
    page.on('console', (message) => {
      if (message.type() === 'error') console.log(`[page console] ${message.text()}`);
    });
    await openHarness(page, '', server.origin);
    const key = await issueKey(page, 'realtime');
    expect((await page.evaluate(() => window.harness.lantern.offlineReady)).ready).toBe(true);
    await server.close();
    await expect(fetch(`${server.origin}/`)).rejects.toThrow(); // the network really is gone

    // No click first: a page that captures the microphone may play sound (Chromium's autoplay policy), both the SDK's
    // audio element and the Web Audio of the page's own peer, which answers in the same page.
    await startCall(page, key);
    await voiceTurn(page);

    // A forced tool: called in the page, and the agent answers after its output.
    const before = await callState(page);
    const functionCalls = (now: CallState) => now.history.filter((item) => item.type === 'function_call').length;
    await page.evaluate(() => {
      const { transport } = window.rtc;
      transport.sendEvent({
        type: 'conversation.item.create',
        item: {
          type: 'message',
          role: 'user',
          content: [{ type: 'input_text', text: 'What is the weather in Paris?' }],
        },
      });
      transport.requestResponse({ tool_choice: { type: 'function', name: 'get_weather' } });
    });
    await expect
      .poll(async () => (await callState(page)).toolCalls.length, { timeout: 60_000 })
      .toBeGreaterThan(before.toolCalls.length);
    // The tiny model samples: after the output it may call the tool again before it answers (each call run by the SDK
    // in turn), so the answer is looked for after the last call, however many there were.
    const answeredAfterTool = async () => {
      const now = await callState(page);
      const last = now.history.findLastIndex((item) => item.type === 'function_call');
      const answered = now.history
        .slice(last)
        .some((item) => item.role === 'assistant' && item.transcripts.some((text) => text.trim()));
      return functionCalls(now) > functionCalls(before) && answered;
    };
    await expect
      .poll(answeredAfterTool, { timeout: 120_000 })
      .toBe(true)
      .catch(async (error: unknown) => {
        console.log(`[realtime] no answer after the forced tool: ${JSON.stringify((await callState(page)).history)}`);
        throw error;
      });
    // Its answer spoken to the end before the next turn.
    await expect
      .poll(async () => count((await callState(page)).events, 'output_audio_buffer.stopped'), { timeout: 60_000 })
      .toBeGreaterThan(count(before.events, 'output_audio_buffer.stopped'));

    await bargeIn(page);
    await typedMessage(page);

    // Another key cannot hang up this call (404: no such call of its own), nor can a client secret (it only opens
    // calls); this call's key can, and the page's peer closes.
    const callId = (await callState(page)).callId;
    expect(callId).toMatch(/^rtc_/);
    const other = await issueKey(page, 'realtime other');
    const hangup = (credential: string) =>
      page.evaluate(
        async ({ credential, id }) => {
          const answer = await fetch(`/v1/realtime/calls/${id}/hangup`, {
            method: 'POST',
            headers: { Authorization: `Bearer ${credential}` },
          });
          return answer.status;
        },
        { credential, id: callId },
      );
    const secret = await page.evaluate(async (k) => {
      const answer = await fetch('/v1/realtime/client_secrets', {
        method: 'POST',
        headers: { Authorization: `Bearer ${k}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ session: { type: 'realtime', model: 'gpt-realtime' } }),
      });
      return ((await answer.json()) as { value: string }).value;
    }, key);
    expect(await hangup(other)).toBe(404);
    expect(await hangup(secret)).toBe(401);
    expect((await callState(page)).channel).toBe('open');
    expect(await hangup(key)).toBe(200);
    await expect.poll(async () => (await callState(page)).channel, { timeout: 10_000 }).toBe('closed');
  } finally {
    await server.close();
    await browser.close();
  }
});

test(
  'a WebRTC call in Firefox: its page answers the SDK, a clip for a microphone; voice and text out, barge-in, typed messages',
  { tag: PORTABLE },
  async ({ baseURL }, info) => {
    test.skip(
      info.project.name === 'webkit',
      "Debian's WebKitGTK (2.50) is built without WebRTC: no RTCPeerConnection, so neither the SDK nor the page can call",
    );
    test.skip(info.project.name !== 'firefox', 'Chromium calls in the test above, with its fake microphone');
    // This machine has no sound card, and Firefox's Web Audio runs only with one: cubeb's mock context stands in for
    // it. A page may play sound without a click (a test has none).
    const browser = await startFirefox(true, {
      'media.cubeb.force_mock_context': true,
      'media.autoplay.default': 0,
      'media.autoplay.block-webaudio': false,
    });
    try {
      const tab = firefoxTab(await (await browser.createBrowserContext()).newPage(), baseURL);
      await openHarness(tab);
      const key = await issueKey(tab, 'realtime');
      await startCall(tab, key, speechBytes(CLIP).toString('base64'));
      await voiceTurn(tab);
      await bargeIn(tab);
      await typedMessage(tab);
    } finally {
      await browser.close();
    }
  },
);
