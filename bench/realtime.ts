/**
 * The Realtime API's voice turn in Node (`GET /v1/realtime`, the WebSocket form, lantern/node): how long from the end
 * of the user's speech to the first audio out, on the bundled models (tiny-whisper hears, tiny-chat answers,
 * tiny-speech says it), and where that time goes.
 *
 * A client streams a held-out clip of test/fixtures/speech (espeak-ng speech the models never saw, its trailing quiet
 * cut so that the clip ends where the speech does) as `input_audio_buffer.append` events in real time, 100 ms at a
 * time, then silence as a microphone would until the answer's first audio, to a socket served by `realtimeWebSocket`
 * over `createHandler` in this process; server VAD ends the turn. Each turn's milestones are timed from the moment the
 * clip's last speech was sent, as the client sees their events arrive:
 *
 * - VAD wait: `input_audio_buffer.speech_stopped` (the session's silence duration, 500 ms, is most of it);
 * - transcription: `conversation.item.input_audio_transcription.completed`;
 * - first text: the first `response.output_audio_transcript.delta`;
 * - first audio: the first `response.output_audio.delta` — the figure the issue asks for.
 *
 * Beside them, the session's own count of the same turn (its `onMetrics`): end of speech to first audio, the silence
 * VAD waited for taken in audio time, and how long the answer waited for the transcript after the commit (the
 * session begins transcribing at a pause in speech, so most of the transcription is done by then).
 *
 * Figures are medians and 90th percentiles over the turns (each turn a fresh session, the clips in turn), after one
 * untimed warm-up turn that loads the models. A section of `npm run bench` and of its smoke pass (one turn, no
 * warm-up); alone: `npx tsx bench/realtime.ts [--smoke]`.
 */
import { serve } from '@hono/node-server';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import { createEngine, createHandler, KeyRing } from '../src/index.ts';
import { handleRealtimeWebSocket } from '../src/node/index.ts';
import type { RealtimeMetrics } from '../src/realtime/index.ts';
import { pcmBase64, REALTIME_RATE, realtimeClip, silence } from '../test/support/realtime-audio.ts';
import { benchProfile, CHAT } from './models.ts';
import { median, quantile, round } from './stats.ts';

const MODELS = fileURLToPath(new URL('../public/models', import.meta.url));
/** The held-out clips the turns say, in turn. */
const CLIPS = ['clip00.wav', 'clip01.wav', 'clip02.wav', 'clip03.wav', 'clip04.wav'];
/** The audio a client sends at once, and how often: a microphone's 100 ms. */
const CHUNK_MS = 100;
/** Quiet under this share of full scale at a clip's end is not speech: the clip is cut there. */
const QUIET = 0.01;
/** A turn that has not answered in this long has failed. */
const TURN_TIMEOUT_MS = 120_000;
/** Silence before the speech, so that VAD hears it start. */
const LEAD_SILENCE_SECONDS = 0.3;

export interface RealtimePlan {
  turns: number;
  /** Whether one untimed turn goes first (the models' load). */
  warmUp: boolean;
}
export const REALTIME_PLAN: RealtimePlan = { turns: 10, warmUp: true };
export const REALTIME_SMOKE_PLAN: RealtimePlan = { turns: 1, warmUp: false };

/** One turn's milestones, ms after the end of speech, as the client sees them; and as the session counts them. */
interface Turn {
  vadMs: number;
  transcriptionMs: number;
  firstTextMs: number;
  firstAudioMs: number;
  sessionFirstAudioMs: number;
  sttMs: number;
}
type Milestone = keyof Turn;
type ClientTurn = Omit<Turn, 'sessionFirstAudioMs' | 'sttMs'>;
const MILESTONES: Record<Milestone, string> = {
  vadMs: 'VAD wait (`input_audio_buffer.speech_stopped`)',
  transcriptionMs: 'transcribed (`…input_audio_transcription.completed`)',
  firstTextMs: 'first text (`response.output_audio_transcript.delta`)',
  firstAudioMs: 'first audio (`response.output_audio.delta`)',
  sessionFirstAudioMs:
    "first audio as the session counts it (`onMetrics`: VAD's silence in audio time, then wall time)",
  sttMs:
    'the wait for the transcript after the commit (`onMetrics`; less than the transcription when it began at a pause)',
};

export interface RealtimeResults {
  turns: number;
  clips: string[];
  /** Each milestone's ms after the end of speech: median and 90th percentile. */
  ms: Record<Milestone, { median: number; p90: number }>;
}

/** `pcm` without its trailing quiet: the clip ends where its speech does. */
function speechOnly(pcm: Int16Array): Int16Array {
  let end = pcm.length;
  while (end > 0 && Math.abs(pcm[end - 1]!) < QUIET * 0x8000) end--;
  return pcm.subarray(0, end);
}

/** One voice turn over a fresh socket at `url`: the clip said in real time, then silence until the first audio. */
async function turn(url: string, key: string, clip: string): Promise<ClientTurn> {
  const speech = speechOnly(realtimeClip(clip).pcm);
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${key}` } });
  const arrived = new Map<string, number>();
  let endOfSpeech = NaN;
  let failure: string | undefined;
  const answered = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`realtime: no answer to ${clip} in ${TURN_TIMEOUT_MS} ms`)),
      TURN_TIMEOUT_MS,
    );
    ws.on('message', (data) => {
      const event = JSON.parse(String(data)) as { type: string; error?: { message: string } };
      if (!arrived.has(event.type)) arrived.set(event.type, performance.now());
      if (event.type === 'error') failure ??= event.error?.message;
      if (event.type === 'response.done') {
        clearTimeout(timer);
        resolve();
      }
    });
    ws.once('close', (code) => reject(new Error(`realtime: the socket closed (${code}) during ${clip}`)));
    ws.once('error', reject);
  });
  answered.catch(() => {});
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  ws.send(
    JSON.stringify({
      type: 'session.update',
      session: {
        type: 'realtime',
        output_modalities: ['audio'],
        instructions: 'Answer in one short sentence.',
        max_output_tokens: 16,
        audio: {
          input: {
            format: { type: 'audio/pcm', rate: REALTIME_RATE },
            transcription: { model: 'whisper-1' },
            turn_detection: { type: 'server_vad' },
          },
          output: { format: { type: 'audio/pcm', rate: REALTIME_RATE }, voice: 'alloy' },
        },
      },
    }),
  );
  // Speech, then silence, in real time: each chunk sent when a microphone would have it whole (at its end).
  const lead = silence(LEAD_SILENCE_SECONDS);
  const said = new Int16Array(lead.length + speech.length);
  said.set(lead);
  said.set(speech, lead.length);
  const chunk = (REALTIME_RATE * CHUNK_MS) / 1000;
  const quiet = silence(CHUNK_MS / 1000);
  const started = performance.now();
  let sent = 0;
  while (!arrived.has('response.output_audio.delta') && !arrived.has('response.done') && ws.readyState === ws.OPEN) {
    if (performance.now() - started > TURN_TIMEOUT_MS) break;
    const piece = sent < said.length ? said.subarray(sent, sent + chunk) : quiet;
    const wait = started + ((sent + piece.length) / REALTIME_RATE) * 1000 - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: pcmBase64(piece) }));
    sent += piece.length;
    if (sent === said.length) endOfSpeech = performance.now();
  }
  await answered;
  ws.close();
  const after = (type: string) => {
    const at = arrived.get(type);
    if (at === undefined)
      throw new Error(`realtime: no ${type} in the turn of ${clip}${failure ? `: ${failure}` : ''}`);
    return at - endOfSpeech;
  };
  return {
    vadMs: after('input_audio_buffer.speech_stopped'),
    transcriptionMs: after('conversation.item.input_audio_transcription.completed'),
    firstTextMs: after('response.output_audio_transcript.delta'),
    firstAudioMs: after('response.output_audio.delta'),
  };
}

/** In Node: the handler over the bundled models in this process, its Realtime WebSocket on a local port. */
export async function realtimeNode(plan: RealtimePlan, log: (message: string) => void): Promise<RealtimeResults> {
  const engine = createEngine({ profile: benchProfile(MODELS) });
  const keys = new KeyRing();
  const handler = createHandler({ engine, keys, rateLimits: { requestsPerMinute: 1e6 } });
  const { key } = await keys.issue('bench');
  const server = await new Promise<Server>((resolve) => {
    const s = serve({ fetch: handler, hostname: '127.0.0.1', port: 0 }, () => resolve(s as Server)) as Server;
  });
  // The session's own count of each response (its last one is the turn's: one response a session here).
  const counted: RealtimeMetrics[] = [];
  const sockets = handleRealtimeWebSocket(server, handler, { session: { onMetrics: (m) => counted.push(m) } });
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/v1/realtime?model=${CHAT}`;
  try {
    if (plan.warmUp) {
      log('realtime: warm-up turn (the models load)');
      await turn(url, key, CLIPS[0]!);
    }
    const turns: Turn[] = [];
    const clips: string[] = [];
    for (let i = 0; i < plan.turns; i++) {
      const clip = CLIPS[i % CLIPS.length]!;
      counted.length = 0;
      const seen = await turn(url, key, clip);
      const timed = {
        ...seen,
        sessionFirstAudioMs: counted.at(-1)?.speechEndToFirstAudioMs ?? NaN,
        sttMs: counted.at(-1)?.transcriptionMs ?? NaN,
      };
      log(
        `realtime: turn ${i + 1}/${plan.turns} (${clip}): first audio ${round(timed.firstAudioMs, 0)} ms after the end of speech`,
      );
      turns.push(timed);
      clips.push(clip);
    }
    const ms = Object.fromEntries(
      (Object.keys(MILESTONES) as Milestone[]).map((m) => {
        const values = turns.map((t) => t[m]);
        return [m, { median: round(median(values), 0), p90: round(quantile(values, 0.9), 0) }];
      }),
    ) as RealtimeResults['ms'];
    return { turns: turns.length, clips: [...new Set(clips)], ms };
  } finally {
    sockets.close();
    await new Promise((resolve) => server.close(resolve));
  }
}

/** The section's table for the bench's markdown. */
export function realtimeTable(results: RealtimeResults): string {
  return [
    `| Ms after the end of speech, ${results.turns} turns (${results.clips.join(', ')}) | Median | p90 |`,
    '| --- | --- | --- |',
    ...(Object.keys(MILESTONES) as Milestone[]).map(
      (m) => `| ${MILESTONES[m]} | ${results.ms[m].median} | ${results.ms[m].p90} |`,
    ),
  ].join('\n');
}

// Alone: `tsx bench/realtime.ts [--smoke]`.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const plan = process.argv.includes('--smoke') ? REALTIME_SMOKE_PLAN : REALTIME_PLAN;
  const log = (message: string) => console.log(`[bench] ${message}`);
  const started = performance.now();
  const results = await realtimeNode(plan, log);
  console.log(`\n${realtimeTable(results)}\n\n${JSON.stringify(results)}`);
  log(`realtime: ${round((performance.now() - started) / 1000, 1)} s`);
}
