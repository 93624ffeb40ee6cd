/**
 * The page `npm start` serves: Lantern started in the browser, and a chat box that streams a reply through the
 * official openai SDK from `/v1`. (The full playground replaces it.)
 */
import OpenAI from 'openai';
import { bundledProfile, startLocalAPI } from '../client/index.ts';

const $ = (id: string) => document.getElementById(id)!;

// The bundled models: this page works offline, with nothing to download.
const lantern = await startLocalAPI({ profile: bundledProfile('/models') });
$('base-url').textContent = lantern.baseURL;
$('status').textContent = 'ready';
const showHost = () => ($('host').textContent = lantern.isHost ? 'this tab' : 'another tab');
showHost();
lantern.addEventListener('host', showHost);
lantern.addEventListener('device', (e) => ($('device').textContent = e.detail.device));
lantern.addEventListener('progress', (e) => {
  if (e.detail.status === 'ready') $('status').textContent = `${e.detail.model} loaded`;
});

// A key for this page visit only: revoked when the page goes away.
const { key, info } = await lantern.keys.issue('demo page');
addEventListener('pagehide', () => void lantern.keys.revoke(info.id));
const client = new OpenAI({ baseURL: lantern.baseURL, apiKey: key, dangerouslyAllowBrowser: true });

$('chat').addEventListener('submit', async (event) => {
  event.preventDefault();
  const reply = $('reply');
  reply.textContent = '';
  try {
    const stream = await client.chat.completions.create({
      model: 'crimson-falcon-4',
      messages: [{ role: 'user', content: ($('prompt') as HTMLInputElement).value }],
      stream: true,
    });
    for await (const chunk of stream) reply.textContent += chunk.choices[0]?.delta.content ?? '';
  } catch (error) {
    reply.textContent = `Error: ${(error as Error).message}`;
  }
});
