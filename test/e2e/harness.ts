/**
 * The end-to-end harness page: a real app page that starts Lantern and bundles the official openai SDK. Playwright
 * drives it through `window.harness`; the SDK calls run in the page, through the real service worker and engine worker.
 */
import OpenAI from 'openai';
import {
  bundledProfile,
  DEFAULT_PROFILE,
  startLocalAPI,
  type DevicePreference,
  type LoadProgress,
  type RunReport,
} from '../../src/client/index.ts';

const params = new URLSearchParams(location.search);
// ?profile=default: the real models (they need the network); otherwise the bundled ones.
const profile = params.get('profile') === 'default' ? DEFAULT_PROFILE : bundledProfile('/models');
const lantern = await startLocalAPI({
  device: (params.get('device') as DevicePreference | null) ?? 'auto',
  // ?broken=amber-phoenix-4 points that ID at a model whose weights are corrupt (see vite.config.ts).
  profile: params.get('broken')
    ? {
        ...profile,
        [params.get('broken')!]: {
          task: 'chat',
          created: 0,
          candidates: [{ engine: 'transformers', model: '/e2e/corrupt-chat', dtype: 'fp32', device: 'cpu' }],
        },
      }
    : profile,
});

const runs: RunReport[] = [];
lantern.addEventListener('run', (event) => runs.push(event.detail));
const progress: LoadProgress[] = [];
lantern.addEventListener('progress', (event) => progress.push(event.detail));

/** The SDK error class of `error` and its code ("AuthenticationError invalid_api_key"); class names are minified. */
function describeError(error: unknown): string {
  const classes = [
    'AuthenticationError',
    'NotFoundError',
    'BadRequestError',
    'RateLimitError',
    'InternalServerError',
  ] as const;
  const name = classes.find((c) => error instanceof OpenAI[c]) ?? `unexpected ${String(error)}`;
  const code = (error as { code?: string | null }).code;
  return code ? `${name} ${code}` : name;
}

const harness = {
  lantern,
  OpenAI,
  runs,
  progress,
  describeError,
  /** An SDK client for `key`; retries off unless asked, so tests see each answer. */
  client: (key: string, options: { maxRetries?: number } = {}) =>
    new OpenAI({ baseURL: lantern.baseURL, apiKey: key, dangerouslyAllowBrowser: true, maxRetries: 0, ...options }),
};
Object.assign(window, { harness });
export type Harness = typeof harness;
