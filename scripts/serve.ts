/**
 * `npm run serve:node`: the /v1 handler served from Node on 127.0.0.1 with the bundled models, and a fresh API key.
 * (`npm start` serves the browser app; this is the same handler without a browser.)
 *
 * Environment: `PORT` (default 8787; 0 picks a free one); `LANTERN_CORS_ORIGINS`, the browser origins allowed to call
 * it, comma-separated, or `*` for any (default: http(s)://localhost, 127.0.0.1 and [::1] on any port, so that a dev
 * server of another port, such as Vite's, can use it).
 */
import { serve } from '@hono/node-server';
import { fileURLToPath } from 'node:url';
import {
  bundledProfile,
  createEngine,
  createHandler,
  isLocalOrigin,
  KeyRing,
  type CorsOptions,
  type LoadProgress,
} from '../src/index.ts';

const port = Number(process.env.PORT ?? 8787);
const host = '127.0.0.1';

/** The allowed origins from `LANTERN_CORS_ORIGINS`, or those of local development; and how to tell them. */
function corsFrom(setting = process.env.LANTERN_CORS_ORIGINS?.trim()): {
  origins: CorsOptions['origins'];
  shown: string;
} {
  if (!setting) return { origins: isLocalOrigin, shown: 'localhost, 127.0.0.1 and [::1], any port' };
  if (setting === '*') return { origins: () => true, shown: 'any origin' };
  const origins = setting.split(',').map((origin) => origin.trim().replace(/\/$/, ''));
  return { origins, shown: origins.join(', ') };
}

const onProgress = (p: LoadProgress) => {
  if (p.status === 'ready') console.log(`[lantern] ${p.model} loaded`);
};
const engine = createEngine({
  profile: bundledProfile(fileURLToPath(new URL('../public/models', import.meta.url))),
  onProgress,
});
const keys = new KeyRing();
const { key } = await keys.issue('npm start');
const cors = corsFrom();
const handler = createHandler({ engine, keys, cors: { origins: cors.origins } });

serve({ fetch: handler, hostname: host, port }, (info) => {
  const base = `http://${host}:${info.port}/v1`;
  console.log(`Lantern is serving the bundled models at ${base}

  API key (shown once, valid until this process ends):  ${key}
  Browser apps may call it from (CORS; set LANTERN_CORS_ORIGINS to change):  ${cors.shown}

  curl ${base}/chat/completions -H "Authorization: Bearer ${key}" -H "Content-Type: application/json" \\
    -d '{"model": "crimson-falcon-4", "messages": [{"role": "user", "content": "Count to 10."}], "stream": true}'

  new OpenAI({ baseURL: '${base}', apiKey: '${key}' })

Press Ctrl+C to stop.`);
});
