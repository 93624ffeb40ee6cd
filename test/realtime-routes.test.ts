import { describe, expect, it } from 'vitest';
import type { RealtimeCall } from '../src/api/options.ts';
import { openaiClient, sdkClient } from './support/lantern.ts';

/**
 * The Realtime API's HTTP routes: client secrets (`ek_…`) and what they may open, WebRTC calls handed to the answerer
 * (the service worker's page peer; here a recorder of what it was handed, since the routes run no model), call
 * credentials, hangup, and every one of them per key.
 */
const OFFER = 'v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\n';

async function lantern(options: { answerer?: boolean; clock?: { now: number } } = {}) {
  const answered: RealtimeCall[] = [];
  const hungUp: string[] = [];
  const now = options.clock ? () => options.clock!.now : Date.now;
  const realtime = options.answerer
    ? {
        answer: async (call: RealtimeCall) => {
          answered.push(call);
          return 'v=0\r\ns=answer\r\n';
        },
        hangup: (id: string) => void hungUp.push(id),
      }
    : undefined;
  const setup = await sdkClient({
    handler: { onServerError: () => {}, now, ...(realtime && { realtime }) },
    client: { maxRetries: 0 },
  });
  /** A call's request: the offer as `application/sdp`, or `type: null` for a body that sets its own (a form). */
  const call = (secret: string, body: BodyInit = OFFER, type: string | null = 'application/sdp') =>
    setup.handler(
      new Request('http://lantern.test/v1/realtime/calls', {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, ...(type !== null && { 'content-type': type }) },
        body,
      }),
    );
  const as = (secret: string, path: string, init: RequestInit = {}) =>
    setup.handler(
      new Request(`http://lantern.test${path}`, {
        ...init,
        headers: { authorization: `Bearer ${secret}`, ...(init.headers as Record<string, string>) },
      }),
    );
  return { ...setup, answered, hungUp, call, as };
}

describe('client secrets', () => {
  it('mints an ek_ secret for a session as the openai SDK asks, living as long as expires_after says', async () => {
    const clock = { now: Date.UTC(2026, 10, 28) };
    const { client } = await lantern({ clock });
    const secret = await client.realtime.clientSecrets.create({
      expires_after: { anchor: 'created_at', seconds: 60 },
      session: { type: 'realtime', instructions: 'Be brief.', output_modalities: ['text'] },
    });
    expect(secret.value).toMatch(/^ek_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(secret.expires_at).toBe(clock.now / 1000 + 60);
    expect(secret.session).toMatchObject({ type: 'realtime', model: 'gpt-realtime', instructions: 'Be brief.' });
    const fallback = await client.realtime.clientSecrets.create({});
    expect(fallback.expires_at).toBe(clock.now / 1000 + 600);
  });

  it('refuses what OpenAI refuses, naming the parameter', async () => {
    const { client } = await lantern();
    const refused = async (body: object) => {
      const error = await client.realtime.clientSecrets.create(body as never).catch((caught: unknown) => caught);
      return error as { status: number; param: string };
    };
    expect(await refused({ expires_after: { seconds: 5 } })).toMatchObject({
      status: 400,
      param: 'expires_after.seconds',
    });
    expect(await refused({ expires_after: { anchor: 'now', seconds: 60 } })).toMatchObject({
      param: 'expires_after.anchor',
    });
    expect(await refused({ session: { type: 'transcription' } })).toMatchObject({ param: 'session.type' });
    expect(await refused({ session: 'realtime' })).toMatchObject({ param: 'session' });
  });

  it('opens calls only: another route, another secret, an expired one or a revoked key is a 401', async () => {
    const clock = { now: Date.UTC(2026, 10, 28) };
    const { client, handler, keys, as, call } = await lantern({ answerer: true, clock });
    const { value } = await client.realtime.clientSecrets.create({ expires_after: { seconds: 30 } });
    for (const [path, init] of [
      ['/v1/models', {}],
      ['/v1/chat/completions', { method: 'POST', body: '{}' }],
      ['/v1/realtime/client_secrets', { method: 'POST', body: '{}' }],
    ] as const) {
      const answer = await as(value, path, init);
      expect(answer.status, path).toBe(401);
      expect((await answer.json()).error.message).toMatch(/accepted only by POST \/v1\/realtime\/calls/);
    }
    expect((await as(value, '/v1/realtime')).status).toBe(426); // the WebSocket URL: accepted, not upgraded here
    const forged = value.slice(0, -4) + 'AAAA';
    expect((await call(forged)).status).toBe(401);
    clock.now += 31_000;
    const expired = await call(value);
    expect(expired.status).toBe(401);
    expect((await expired.json()).error.message).toMatch(/expired/);
    const fresh = await client.realtime.clientSecrets.create({});
    const [info] = await keys.list();
    await keys.revoke(info!.id);
    expect((await call(fresh.value)).status).toBe(401);
    void handler;
  });
});

describe('calls', () => {
  it('in Node, points at the WebSocket form', async () => {
    const { client, call } = await lantern();
    const { value } = await client.realtime.clientSecrets.create({});
    const answer = await call(value);
    expect(answer.status).toBe(400);
    expect(await answer.json()).toMatchObject({ error: { code: 'webrtc_unavailable' } });
  });

  it("hands the offer and the secret's session to the answerer, and answers 201 with its SDP and the call's URL", async () => {
    const { client, call, answered, as } = await lantern({ answerer: true });
    const session = { type: 'realtime' as const, model: 'gpt-realtime', instructions: 'Say hi.' };
    const { value } = await client.realtime.clientSecrets.create({ session });
    const answer = await call(value);
    expect(answer.status).toBe(201);
    expect(answer.headers.get('content-type')).toBe('application/sdp');
    expect(await answer.text()).toBe('v=0\r\ns=answer\r\n');
    const [handed] = answered;
    expect(answer.headers.get('location')).toBe(`/v1/realtime/calls/${handed!.id}`);
    expect(handed).toMatchObject({ offer: OFFER, model: 'gpt-realtime', session });
    // The call's credential runs the session's models, and nothing else.
    expect((await as(handed!.credential, '/v1/models')).status).toBe(200);
    expect((await as(handed!.credential, '/v1/files')).status).toBe(401);
    expect((await as(handed!.credential, '/v1/realtime/client_secrets', { method: 'POST', body: '{}' })).status).toBe(
      401,
    );
  });

  it('takes a form with sdp and session, and an API key as well as a secret', async () => {
    const { key, call, answered } = await lantern({ answerer: true });
    const form = new FormData();
    form.set('sdp', OFFER);
    form.set('session', JSON.stringify({ type: 'realtime', model: 'gpt-4o-mini', instructions: 'Form.' }));
    expect((await call(key, form, null)).status).toBe(201);
    expect(answered[0]).toMatchObject({ model: 'gpt-4o-mini', session: { instructions: 'Form.' } });
    expect((await call(key)).status).toBe(201);
    expect(answered[1]).toMatchObject({ model: 'gpt-realtime', session: undefined });
  });

  it('refuses what is not an offer, before anything answers it', async () => {
    const { key, call, answered } = await lantern({ answerer: true });
    expect((await call(key, 'hello')).status).toBe(400);
    expect((await call(key, OFFER, 'text/plain')).status).toBe(400);
    expect((await call(key, OFFER + 'a=x'.repeat(30_000))).status).toBe(400);
    expect(answered).toEqual([]);
  });

  it('hangs up its own calls only; the credential then stops working', async () => {
    const { key, handler, keys, call, answered, hungUp, as } = await lantern({ answerer: true });
    await call(key);
    const { id, credential } = answered[0]!;
    const other = (await keys.issue('another app')).key;
    const otherClient = openaiClient(handler, other, { maxRetries: 0 });
    await expect(otherClient.realtime.calls.hangup(id)).rejects.toMatchObject({ status: 404 });
    expect(hungUp).toEqual([]);
    const ownClient = openaiClient(handler, key, { maxRetries: 0 });
    await ownClient.realtime.calls.hangup(id);
    expect(hungUp).toEqual([id]);
    expect((await as(credential, '/v1/models')).status).toBe(401);
    await expect(ownClient.realtime.calls.hangup(id)).rejects.toMatchObject({ status: 404 });
  });

  it("lets a call's credential hang up its own call, and no other", async () => {
    const { key, call, answered, as } = await lantern({ answerer: true });
    await call(key);
    await call(key);
    const [first, second] = answered;
    const hangup = (credential: string, id: string) =>
      as(credential, `/v1/realtime/calls/${id}/hangup`, { method: 'POST' });
    expect((await hangup(first!.credential, second!.id)).status).toBe(404);
    expect((await as(second!.credential, '/v1/models')).status).toBe(200);
    expect((await hangup(first!.credential, first!.id)).status).toBe(200);
    expect((await as(first!.credential, '/v1/models')).status).toBe(401);
  });
});
