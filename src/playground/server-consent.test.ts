import { describe, expect, it } from 'vitest';
import {
  allowOnce,
  forgetServer,
  rememberedServers,
  rememberServer,
  serverFromParams,
  takeConsent,
  type ConsentStores,
} from './server-consent.ts';

/** A Storage over a Map (Node has no localStorage or sessionStorage). */
function mapStorage(): Storage {
  const items = new Map<string, string>();
  return {
    get length() {
      return items.size;
    },
    key: (index) => [...items.keys()][index] ?? null,
    getItem: (name) => items.get(name) ?? null,
    setItem: (name, value) => void items.set(name, String(value)),
    removeItem: (name) => void items.delete(name),
    clear: () => items.clear(),
  };
}

const stores = (): ConsentStores => ({ remembered: mapStorage(), once: mapStorage() });
const PAGE = 'https://playground.example/?x=1';

describe('serverFromParams', () => {
  it('reads the server a link names: absolute, its origin, shown without credentials', () => {
    const params = new URLSearchParams({
      remote: 'https://user:secret@llm.example:8443/v1',
      remoteModel: 'llama3.2',
      policy: 'remote-first',
    });
    expect(serverFromParams(params, PAGE)).toEqual({
      baseURL: 'https://user:secret@llm.example:8443/v1',
      origin: 'https://llm.example:8443',
      shown: 'https://llm.example:8443/v1',
      model: 'llama3.2',
      policy: 'remote-first',
    });
    // A path is on the page's own origin; an unknown policy is the default.
    expect(serverFromParams(new URLSearchParams({ remote: '/api/llm/v1', policy: 'anything' }), PAGE)).toMatchObject({
      baseURL: 'https://playground.example/api/llm/v1',
      origin: 'https://playground.example',
      policy: 'local-first',
      model: '',
    });
  });

  it('names no server for an empty or non-http(s) remote', () => {
    for (const remote of ['', '  ', 'javascript:alert(1)', 'data:text/plain,hi', 'http://[nope']) {
      expect(serverFromParams(new URLSearchParams({ remote }), PAGE)).toBeUndefined();
    }
    expect(serverFromParams(new URLSearchParams(), PAGE)).toBeUndefined();
  });
});

describe('consent to a server', () => {
  const server = 'https://llm.example/v1';

  it('is not given by a link: a server neither allowed nor remembered is refused', () => {
    expect(takeConsent(server, stores())).toBe(false);
  });

  it('allowed once holds for the next load only, and for that server only', () => {
    const s = stores();
    allowOnce(server, s);
    expect(takeConsent(server, s)).toBe(true); // the reload the yes made
    expect(takeConsent(server, s)).toBe(false); // the load after it asks again

    allowOnce(server, s);
    expect(takeConsent('https://elsewhere.example/v1', s)).toBe(false); // another server, and the yes is used up
    expect(takeConsent(server, s)).toBe(false);
  });

  it('remembered holds for every load until forgotten', () => {
    const s = stores();
    rememberServer(server, s);
    rememberServer(server, s);
    expect(rememberedServers(s)).toEqual([server]);
    expect(takeConsent(server, s)).toBe(true);
    expect(takeConsent(server, s)).toBe(true);
    expect(takeConsent('https://llm.example/v2', s)).toBe(false); // the exact base URL, not a neighbour
    forgetServer(server, s);
    expect(takeConsent(server, s)).toBe(false);
  });

  it('reads unreadable storage as no consent', () => {
    const s = stores();
    s.remembered.setItem('lantern-playground:servers', '{not json');
    expect(rememberedServers(s)).toEqual([]);
    s.remembered.setItem('lantern-playground:servers', JSON.stringify({ 0: server }));
    expect(takeConsent(server, s)).toBe(false);
    const refusing = mapStorage();
    refusing.getItem = () => {
      throw new DOMException('The operation is insecure.', 'SecurityError');
    };
    expect(takeConsent(server, { remembered: refusing, once: refusing })).toBe(false);
  });
});
