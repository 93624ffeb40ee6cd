/**
 * The playground page (`npm start`): Lantern started in this browser, and one openai client whose every exchange the
 * API tab shows. Offline it runs the bundled models; with `?profile=real` it runs the real registry. With
 * `?remote=<baseURL>&remoteModel=<name>` (the models tab sets them) every chat model's chain ends with that
 * OpenAI-compatible server, tried in the order `?policy=` says.
 */
import OpenAI from 'openai';
import {
  bundledProfile,
  DEFAULT_PROFILE,
  startLocalAPI,
  type ModelProfile,
  type RoutingPolicy,
} from '../client/index.ts';
import './app.ts';
import type { LanternPlayground } from './app.ts';
import { recordingFetch } from './recording-fetch.ts';

const app = document.querySelector('lantern-playground') as LanternPlayground;
const params = new URLSearchParams(location.search);
const real = params.get('profile') === 'real';
app.profile = real ? 'real' : 'bundled';

let profile: ModelProfile = real ? DEFAULT_PROFILE : bundledProfile('/models');
const remote = params.get('remote');
if (remote) {
  const server = { engine: 'remote', baseURL: remote, model: params.get('remoteModel') ?? '' } as const;
  profile = Object.fromEntries(
    Object.entries(profile).map(([id, entry]) => [
      id,
      entry.task === 'chat' ? { ...entry, candidates: [...entry.candidates, server] } : entry,
    ]),
  );
}
const policy = (params.get('policy') ?? 'local-first') as RoutingPolicy;
const lantern = await startLocalAPI({ profile, policy });
// The playground's own key, for this visit only: it exists in memory and is revoked when the page goes away.
const { key, info } = await lantern.keys.issue('playground session');
addEventListener('pagehide', () => void lantern.keys.revoke(info.id));

app.client = new OpenAI({
  baseURL: lantern.baseURL,
  apiKey: key,
  fetch: recordingFetch(lantern.fetch, (exchange) => (app.exchange = exchange)),
  dangerouslyAllowBrowser: true,
  maxRetries: 0,
});
app.lantern = lantern;
lantern.addEventListener('device', () => app.requestUpdate());
