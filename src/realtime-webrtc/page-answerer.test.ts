import { describe, expect, it } from 'vitest';
import type { RealtimeCall } from '../api/options.ts';
import { isCallMessage, isHangupMessage, type CallReply } from './call-messages.ts';
import { PageAnswerer, type ClientsLike } from './page-answerer.ts';

const call: RealtimeCall = {
  id: 'rtc_1',
  offer: 'v=0 offer',
  model: 'gpt-realtime',
  session: { type: 'realtime' },
  credential: 'ek_call',
  expiresAt: Date.now() + 60_000,
};

/** Pages by client id, each answering call messages with `reply` (none: it never answers) and keeping what it heard. */
function pages(reply?: (message: unknown) => CallReply) {
  const heard = new Map<string, unknown[]>();
  const page = (id: string) => ({
    postMessage(message: unknown, transfer: Transferable[]) {
      heard.set(id, [...(heard.get(id) ?? []), message]);
      const port = transfer[0] as MessagePort | undefined;
      if (reply && port && isCallMessage(message)) port.postMessage(reply(message));
    },
  });
  const clients: ClientsLike = {
    get: async (id) => (id === 'gone' ? undefined : page(id)),
    matchAll: async () => [page('page-a'), page('page-b')],
  };
  return { clients, heard };
}

describe('PageAnswerer', () => {
  it('hands the call to the page that made the request, and answers with its SDP', async () => {
    const { clients, heard } = pages(() => ({ sdp: 'v=0 answer' }));
    const answerer = new PageAnswerer(clients);
    const request = new Request('http://localhost/v1/realtime/calls', { method: 'POST' });
    answerer.noteClient(request, 'page-a');
    await expect(answerer.answer(call, request)).resolves.toBe('v=0 answer');
    expect(heard.get('page-a')).toEqual([{ type: 'lantern:realtime-call', call }]);
  });

  it("rejects with the page's reason, or says no page answered", async () => {
    const refused = new PageAnswerer(pages(() => ({ error: 'no microphone' })).clients);
    const request = new Request('http://localhost/v1/realtime/calls', { method: 'POST' });
    refused.noteClient(request, 'page-a');
    await expect(refused.answer(call, request)).rejects.toThrow(/could not answer the WebRTC call: no microphone/);

    const silent = new PageAnswerer(pages().clients, 50);
    silent.noteClient(request, 'page-a');
    await expect(silent.answer(call, request)).rejects.toThrow(/no Lantern page answered.*startLocalAPI\(\)/);

    const unknown = new PageAnswerer(pages(() => ({ sdp: 'x' })).clients);
    await expect(unknown.answer(call, request)).rejects.toThrow(/startLocalAPI\(\)/);
    unknown.noteClient(request, 'gone');
    await expect(unknown.answer(call, request)).rejects.toThrow(/startLocalAPI\(\)/);
  });

  it('tells the answering page of a hangup; every page, of a call this worker does not know', async () => {
    const { clients, heard } = pages(() => ({ sdp: 'v=0 answer' }));
    const answerer = new PageAnswerer(clients);
    const request = new Request('http://localhost/v1/realtime/calls', { method: 'POST' });
    answerer.noteClient(request, 'page-b');
    await answerer.answer(call, request);
    await answerer.hangup('rtc_1');
    expect(heard.get('page-a')).toBeUndefined();
    expect(heard.get('page-b')!.filter(isHangupMessage)).toEqual([{ type: 'lantern:realtime-hangup', id: 'rtc_1' }]);
    // A worker started again since (or a second hangup): the pages that might answer it all hear.
    await answerer.hangup('rtc_1');
    expect(heard.get('page-a')!.filter(isHangupMessage)).toEqual([{ type: 'lantern:realtime-hangup', id: 'rtc_1' }]);
  });
});
