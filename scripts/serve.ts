/**
 * `npm run serve:node`: the /v1 handler served from Node on 127.0.0.1 with the bundled models, and a fresh API key.
 * (`npm start` serves the browser app; this is the same handler without a browser.)
 */
import { serve } from '@hono/node-server';
import { fileURLToPath } from 'node:url';
import { bundledProfile, createEngine, createHandler, KeyRing, type LoadProgress } from '../src/index.ts';

const port = Number(process.env.PORT ?? 8787);
const host = '127.0.0.1';

const onProgress = (p: LoadProgress) => {
  if (p.status === 'ready') console.log(`[lantern] ${p.model} loaded`);
};
const engine = createEngine({
  profile: bundledProfile(fileURLToPath(new URL('../public/models', import.meta.url))),
  onProgress,
});
const keys = new KeyRing();
const { key } = await keys.issue('npm start');
const handler = createHandler({ engine, keys });

serve({ fetch: handler, hostname: host, port }, () => {
  const base = `http://${host}:${port}/v1`;
  console.log(`Lantern is serving the bundled models at ${base}

  API key (shown once, valid until this process ends):  ${key}

  curl ${base}/chat/completions -H "Authorization: Bearer ${key}" -H "Content-Type: application/json" \\
    -d '{"model": "crimson-falcon-4", "messages": [{"role": "user", "content": "Count to 10."}], "stream": true}'

  new OpenAI({ baseURL: '${base}', apiKey: '${key}' })

Press Ctrl+C to stop.`);
});
