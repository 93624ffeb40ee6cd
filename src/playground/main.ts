/**
 * The playground page (`npm start`): Lantern started in this browser, and one openai client whose every exchange the
 * API tab shows. Offline it runs the bundled models; with `?profile=real` it runs the real registry.
 */
import OpenAI from 'openai';
import { bundledProfile, DEFAULT_PROFILE, startLocalAPI } from '../client/index.ts';
import './app.ts';
import type { LanternPlayground } from './app.ts';
import { recordingFetch } from './recording-fetch.ts';

const app = document.querySelector('lantern-playground') as LanternPlayground;
const real = new URLSearchParams(location.search).get('profile') === 'real';
app.profile = real ? 'real' : 'bundled';

const lantern = await startLocalAPI({ profile: real ? DEFAULT_PROFILE : bundledProfile('/models') });
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
