/**
 * The playground page (`npm start`): Lantern started in this browser, and one openai client whose every exchange the
 * API tab shows. Offline it runs the bundled models; with `?profile=real` it runs the real registry. With
 * `?remote=<baseURL>&remoteModel=<name>` (the models tab sets them) every chat model's chain ends with that
 * OpenAI-compatible server, tried in the order `?policy=` says: but only once the person has allowed that server
 * (server-consent.ts), since anyone can write a link. Until then the chains are this browser's models alone.
 */
import OpenAI from 'openai';
import { bundledProfile, DEFAULT_PROFILE, startLocalAPI, type ModelProfile } from '../client/index.ts';
import './app.ts';
import type { LanternPlayground } from './app.ts';
import { recordingFetch } from './recording-fetch.ts';
import { serverFromParams, takeConsent } from './server-consent.ts';

const app = document.querySelector('lantern-playground') as LanternPlayground;
const params = new URLSearchParams(location.search);
const real = params.get('profile') === 'real';
app.profile = real ? 'real' : 'bundled';

let profile: ModelProfile = real ? DEFAULT_PROFILE : bundledProfile('/models');
const server = serverFromParams(params, location.href);
const allowed = server !== undefined && takeConsent(server.baseURL);
if (server && allowed) {
  const candidate = { engine: 'remote', baseURL: server.baseURL, model: server.model } as const;
  profile = Object.fromEntries(
    Object.entries(profile).map(([id, entry]) => [
      id,
      entry.task === 'chat' ? { ...entry, candidates: [...entry.candidates, candidate] } : entry,
    ]),
  );
}
app.server = allowed ? server : undefined;
app.pendingServer = allowed ? undefined : server;
// Without an allowed server, `local-only`: no chain has a server, and none would be tried if one had.
const lantern = await startLocalAPI({ profile, policy: server && allowed ? server.policy : 'local-only' });
// The playground's own key, the same on every visit (kept in localStorage, as any app's `forApp` key is).
const { key } = await lantern.keys.forApp('playground');

app.client = new OpenAI({
  baseURL: lantern.baseURL,
  apiKey: key,
  fetch: recordingFetch(lantern.fetch, (exchange) => (app.exchange = exchange)),
  dangerouslyAllowBrowser: true,
  maxRetries: 0,
});
app.lantern = lantern;
lantern.addEventListener('device', () => app.requestUpdate());
