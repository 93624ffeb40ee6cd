/**
 * The end-to-end harness page: a real app page that starts Lantern and bundles the official openai SDK. Playwright
 * drives it through `window.harness`; the SDK calls run in the page, through the real service worker and engine worker.
 */
import OpenAI from 'openai';
import { bundledProfile, startLocalAPI, type DevicePreference, type RunReport } from '../../src/client/index.ts';

const params = new URLSearchParams(location.search);
const profile = bundledProfile('/models');
const lantern = await startLocalAPI({
  device: (params.get('device') as DevicePreference | null) ?? 'auto',
  // ?broken=amber-phoenix-4 points that ID at a model folder that does not exist.
  profile: params.get('broken')
    ? { ...profile, [params.get('broken')!]: { task: 'chat', model: '/models/no-such-model', created: 0 } }
    : profile,
});

const runs: RunReport[] = [];
lantern.addEventListener('run', (event) => runs.push(event.detail));

const harness = {
  lantern,
  OpenAI,
  runs,
  /** An SDK client for `key`; retries off unless asked, so tests see each answer. */
  client: (key: string, options: { maxRetries?: number } = {}) =>
    new OpenAI({ baseURL: lantern.baseURL, apiKey: key, dangerouslyAllowBrowser: true, maxRetries: 0, ...options }),
};
Object.assign(window, { harness });
export type Harness = typeof harness;
