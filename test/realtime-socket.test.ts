import { OpenAIRealtimeWebSocket, RealtimeAgent, RealtimeSession } from '@openai/agents-realtime';
import { beforeAll, describe, expect, it } from 'vitest';
import { LocalRealtimeSocket } from '../src/client/realtime-socket.ts';
import { sdkClient, type SdkClient } from './support/lantern.ts';

/**
 * `LocalRealtimeSocket` (lantern/client): the Realtime API run in the page over `fetch`, for apps (and browsers) without
 * WebRTC, under the Agents SDK's `OpenAIRealtimeWebSocket` (`createWebSocket`), with an API key or a client secret;
 * and the SDK's handoffs, which are a function call and a `session.update`. Here `fetch` is the handler itself, as a
 * page's goes to its service worker; real inference on the bundled models.
 */
const TURN_MS = 120_000;
const MODEL = 'crimson-falcon-4';
let lantern: SdkClient;

beforeAll(async () => {
  lantern = await sdkClient({ handler: { onServerError: () => {} }, client: { maxRetries: 0 } });
});

const fetchHandler: typeof fetch = async (input, init) => lantern.handler(new Request(input, init));

function transport() {
  return new OpenAIRealtimeWebSocket({
    createWebSocket: async ({ url, apiKey }) => new LocalRealtimeSocket(url, apiKey!, { fetch: fetchHandler }) as never,
  });
}

const inHistory = (rt: RealtimeSession, match: (items: RealtimeSession['history']) => boolean) =>
  new Promise<void>((resolve) => {
    if (match(rt.history)) return resolve();
    rt.on('history_updated', (history) => match(history) && resolve());
  });
const answered = (items: RealtimeSession['history']) =>
  items.some((item) => item.type === 'message' && item.role === 'assistant' && item.status === 'completed');

describe('LocalRealtimeSocket under the Agents SDK', () => {
  it(
    'answers sendMessage() with an API key',
    async () => {
      const agent = new RealtimeAgent({ name: 'Assistant', instructions: 'Answer briefly.' });
      const rt = new RealtimeSession(agent, { transport: transport(), model: MODEL });
      const errors: unknown[] = [];
      rt.on('error', (error) => errors.push(error));
      await rt.connect({ apiKey: lantern.key, url: `ws://lantern.test/v1/realtime?model=${MODEL}` });
      rt.sendMessage('Say hello.');
      await inHistory(rt, answered);
      rt.close();
      expect(errors).toEqual([]);
    },
    TURN_MS,
  );

  it(
    "opens a client secret's session, and refuses a bad secret as a WebSocket handshake is refused",
    async () => {
      const { value } = await lantern.client.realtime.clientSecrets.create({
        session: { type: 'realtime', model: MODEL, instructions: 'Be brief.' },
      });
      const socket = new LocalRealtimeSocket('ws://lantern.test/v1/realtime', value, { fetch: fetchHandler });
      const first = await new Promise<{ type: string; session: { instructions: string; model: string } }>((resolve) =>
        socket.addEventListener('message', (event) => resolve(JSON.parse((event as MessageEvent).data))),
      );
      expect(first).toMatchObject({ type: 'session.created', session: { instructions: 'Be brief.', model: MODEL } });
      socket.close();

      const refused = new LocalRealtimeSocket('ws://lantern.test/v1/realtime', 'ek_bad', { fetch: fetchHandler });
      const closed = await new Promise<{ code: number; reason: string }>((resolve) =>
        refused.addEventListener('close', (event) => resolve(event as unknown as { code: number; reason: string })),
      );
      expect(closed.code).toBe(1006);
      expect(closed.reason).toMatch(/client secret/);
    },
    TURN_MS,
  );

  it(
    'hands off to another agent: its instructions become the session’s, and it answers',
    async () => {
      const billing = new RealtimeAgent({ name: 'Billing', instructions: 'You answer billing questions briefly.' });
      const front = new RealtimeAgent({ name: 'Front desk', instructions: 'Greet people.', handoffs: [billing] });
      const socketTransport = transport();
      const rt = new RealtimeSession(front, {
        transport: socketTransport,
        model: MODEL,
        config: { outputModalities: ['text'] },
      });
      const handoffs: string[] = [];
      rt.on('agent_handoff', (_context, from, to) => handoffs.push(`${from.name} → ${to.name}`));
      const updates: string[] = [];
      socketTransport.on('*', (event: { type: string; session?: { instructions?: string } }) => {
        if (event.type === 'session.updated') updates.push(event.session?.instructions ?? '');
      });
      await rt.connect({ apiKey: lantern.key, url: `ws://lantern.test/v1/realtime?model=${MODEL}` });
      // The SDK's name for the handoff's function tool: transfer_to_ and the agent's name.
      const transfer = 'transfer_to_Billing';
      socketTransport.sendMessage('I have a question about my bill.', {}, { triggerResponse: false });
      socketTransport.requestResponse({ tool_choice: { type: 'function', name: transfer } });
      await expect.poll(() => handoffs, { timeout: TURN_MS }).toEqual(['Front desk → Billing']);
      await expect
        .poll(() => updates.some((instructions) => instructions.includes('billing questions')), { timeout: TURN_MS })
        .toBe(true);
      const call = rt.history.find((item) => item.type === 'function_call');
      expect(call).toMatchObject({ name: transfer });
      await inHistory(rt, (items) => answered(items.slice(items.indexOf(call!))));
      rt.close();
    },
    TURN_MS,
  );
});
