import { expect, test, type Page } from '@playwright/test';
import { execSync, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { basename, dirname, extname, join, resolve } from 'node:path';
import OpenAI from 'openai';
import { workerPort } from './servers.ts';
import { launchWebKitDriver, webkitTab } from './webkit-driver.ts';

/**
 * The README's quick start, exactly as a newcomer follows it: its commands and files are read from README.md (so they
 * cannot drift) and run as written, starting in a fresh copy of this repository, which stands for the newcomer's clone:
 * `npm install` there (its `prepare` builds dist/), `npm pack`, then a new Vite app beside it that installs the tarball.
 * The app builds with its own default tsconfig, then in Chromium it lists the models, streams a chat, embeds, and
 * still does all three after a reload with its server gone, with the one key it kept, and answers OpenAI's default
 * `audio.speech.create` with mp3; then the same in WebKit (Safari's engine). It needs the
 * npm registry (Lantern's own dependencies, create-vite, vite, typescript, openai).
 */

/** What `npm create vite@latest` runs, pinned so that CI scaffolds the same app every time. */
const CREATE_VITE = '9.3.0';
/** The app's port: one no other spec's server uses (see servers.ts' workerPort), as this runs beside other specs. */
const PORT = 4196;
const ORIGIN = `http://127.0.0.1:${PORT}`;

interface Snippets {
  commands: string[];
  files: Map<string, string>;
}

/**
 * The snippets of one section of a Markdown file (from its heading to the next heading of its level or above): the
 * lines of its `sh` blocks (comments dropped) are commands, and each `ts` block whose first line is `// path` is that
 * file.
 */
function readSnippets(file: string, heading: string): Snippets {
  const readme = readFileSync(file, 'utf8');
  const start = readme.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`${file} has no section "${heading}"`);
  const level = heading.indexOf(' ');
  const next = new RegExp(`\\n#{1,${level}} `, 'g');
  next.lastIndex = start + heading.length + 1;
  const section = readme.slice(start, next.exec(readme)?.index ?? readme.length);
  const commands: string[] = [];
  const files = new Map<string, string>();
  for (const [, lang, body] of section.matchAll(/```(\w+)\n([\s\S]*?)```/g)) {
    if (lang === 'sh') {
      const lines = body!.split('\n').map((line) => line.replace(/\s+#.*$/, '').trim());
      commands.push(...lines.filter(Boolean));
    } else if (lang === 'ts' && body!.startsWith('// ')) {
      files.set(body!.slice(3, body!.indexOf('\n')).trim(), body!);
    }
  }
  return { commands, files };
}

const quickStart = readSnippets('README.md', '## Quick start');
// One app for the file, built once; after a failure the rest is skipped rather than built again.
test.describe.configure({ mode: 'serial' });
/**
 * The environment of the app's commands, as in a newcomer's shell: none of the npm_* variables of the `npm test` that
 * runs this (they would configure the app's npm as this repository's), and yes to npx's question whether to fetch
 * create-vite.
 */
const APP_ENV = {
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_'))),
  npm_config_yes: 'true',
  npm_config_fund: 'false',
  npm_config_audit: 'false',
};
const timings: Record<string, number> = {};

/** Runs one step and records how long it took (reported, never asserted: the machine is shared). */
function timed<T>(name: string, step: () => T): T {
  const started = performance.now();
  try {
    return step();
  } finally {
    timings[name] = Math.round(performance.now() - started) / 1000;
  }
}

let folder: string;
let app: string;
let server: ChildProcess | undefined;

/**
 * What a clone of this repository holds, copied into `clone`: the files git tracks and those it does not ignore, as
 * they are in the working tree (so that uncommitted changes are tested too), without node_modules, which a fresh
 * clone does not have (in a git worktree it is a symlink that git does not ignore).
 */
function copyRepository(clone: string) {
  const files = execSync('git ls-files -z --cached --others --exclude-standard', { encoding: 'utf8' }).split('\0');
  for (const file of files) {
    if (!file || file === 'node_modules' || file.startsWith('node_modules/') || !existsSync(file)) continue;
    mkdirSync(dirname(join(clone, file)), { recursive: true });
    cpSync(file, join(clone, file));
  }
}

test.beforeAll(async () => {
  test.setTimeout(600_000);
  folder = mkdtempSync(join(tmpdir(), 'lantern-quickstart-'));
  // The README's commands start in the newcomer's clone of this repository; its folder's name does not matter.
  let cwd = join(folder, 'lantern-clone');
  copyRepository(cwd);
  for (const command of quickStart.commands) {
    if (command.startsWith('cd ')) {
      cwd = resolve(cwd, command.slice(3));
      continue;
    }
    if (command.startsWith('npm run preview')) break; // started below, on the test's port
    // The one change: create-vite pinned, so that CI scaffolds the same app every time.
    const run = command.replace('create vite@latest', `create vite@${CREATE_VITE}`);
    // Named with its folder: `npm install` runs in the clone and in the app.
    timed(`${basename(cwd)}: ${command}`, () =>
      execSync(run, { cwd, env: APP_ENV, stdio: ['ignore', 'inherit', 'inherit'] }),
    );
    if (command.startsWith('npm create')) {
      for (const [path, content] of quickStart.files) {
        const file = join(cwd, command.split(' ')[3]!, path); // the new app's folder, named in the command
        mkdirSync(dirname(file), { recursive: true });
        writeFileSync(file, content);
      }
    }
  }
  app = cwd;
});

test.afterAll(async () => {
  if (server) stop(server);
  console.log('Quick start, seconds per step:', timings);
  if (folder) rmSync(folder, { recursive: true, force: true });
});

/** `npm run <script>` of the app (`preview` or `dev`, as the README says) on the test's port; resolves once it answers. */
async function serve(script: 'preview' | 'dev'): Promise<ChildProcess> {
  const args = ['run', script, '--', '--host', '127.0.0.1', '--port', String(PORT), '--strictPort'];
  const child = spawn('npm', args, { cwd: app, env: APP_ENV, stdio: 'ignore', detached: true });
  const answers = () => {
    if (child.exitCode !== null) throw new Error(`npm run ${script} exited (is port ${PORT} taken?)`);
    return fetch(ORIGIN).then(
      (response) => response.ok,
      () => false,
    );
  };
  await expect.poll(answers, { timeout: 30_000 }).toBe(true);
  return child;
}

/** Stops a server started by `serve`: npm and the vite it started. */
function stop(child: ChildProcess) {
  process.kill(-child.pid!);
  server = undefined;
}

/** The keys in the origin's key database (Lantern's `lantern-keys`), read as any script of the origin could. */
function storedKeys(page: Page): Promise<{ name: string; revoked: boolean }[]> {
  return page.evaluate(
    () =>
      new Promise((resolve, reject) => {
        const open = indexedDB.open('lantern-keys');
        open.onerror = () => reject(open.error);
        open.onsuccess = () => {
          const read = open.result.transaction('keys').objectStore('keys').getAll();
          read.onerror = () => reject(read.error);
          read.onsuccess = () => {
            open.result.close();
            const records = read.result as { info: { name: string; revokedAt?: number } }[];
            resolve(records.map(({ info }) => ({ name: info.name, revoked: info.revokedAt !== undefined })));
          };
        };
      }),
  );
}

/** The page's lines once the quick start has run: the models, the reply to "Count to 10.", the embeddings. */
function expectedLines(): string[] {
  const reference = JSON.parse(readFileSync('public/models/tiny-chat/reference.json', 'utf8')) as {
    messages: { content: string }[];
    greedy_text: string;
  }[];
  const count = reference.find((r) => r.messages.at(-1)!.content === 'Count to 10.')!.greedy_text;
  return [
    'Offline: ready',
    'Models: crimson-falcon-4, indigo-owl-4, amber-phoenix-4, jade-mole-4, teal-finch-4, ochre-lark-4',
    `Chat: ${count}`,
    'Embeddings: 2 vectors of 64 numbers',
  ];
}

/**
 * `audio.speech.create` with OpenAI's defaults (no `response_format`: OpenAI answers mp3), as the openai SDK makes it,
 * sent by the page with the app's key, so through its service worker: the request as sent, the answer's type, and how
 * long its audio is as the browser's own decoder reads it.
 */
async function defaultSpeech(page: Page): Promise<{ sent: unknown; type: string | null; seconds: number }> {
  const key = await page.evaluate(() => Object.values(localStorage).find((value) => value.startsWith('lt_')));
  expect(key).toBeDefined();
  let sent: unknown;
  const client = new OpenAI({
    baseURL: `${ORIGIN}/v1`,
    apiKey: key!,
    maxRetries: 0,
    // The SDK's request, sent by the page (a browser drops what it may not send, as content-length).
    fetch: async (url, init) => {
      const body = typeof init?.body === 'string' ? init.body : undefined;
      if (body !== undefined) sent = JSON.parse(body);
      const request = {
        url: String(url),
        method: init?.method ?? 'GET',
        headers: [...new Headers(init?.headers).entries()],
        body,
      };
      const answer = await page.evaluate(async ({ url, ...init }) => {
        const response = await fetch(url, init);
        const bytes = Array.from(new Uint8Array(await response.arrayBuffer()));
        return { status: response.status, headers: [...response.headers.entries()], bytes };
      }, request);
      return new Response(new Uint8Array(answer.bytes), { status: answer.status, headers: answer.headers });
    },
  });
  const response = await client.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'The red fox runs.' });
  const bytes = Array.from(new Uint8Array(await response.arrayBuffer()));
  const seconds = await page.evaluate(async (bytes) => {
    const audio = await new OfflineAudioContext(1, 1, 24_000).decodeAudioData(new Uint8Array(bytes).buffer);
    return audio.duration;
  }, bytes);
  return { sent, type: response.headers.get('content-type'), seconds };
}

test('the README quick start: a fresh Vite app lists the models, streams a chat and embeds, online and offline', async ({
  page,
}) => {
  expect(quickStart.commands.length).toBeGreaterThan(3);
  expect([...quickStart.files.keys()].sort()).toEqual(['src/main.ts', 'vite.config.ts']);
  const expected = expectedLines();
  server = await serve('preview');
  const chatTypes: string[] = [];
  page.on('response', (response) => {
    const type = response.headers()['content-type'] ?? '';
    if (response.url().endsWith('/v1/chat/completions')) chatTypes.push(type.split(';')[0]!);
  });
  page.on('pageerror', (error) => console.log(`[page error] ${error.message}`));

  const started = performance.now();
  await page.goto(ORIGIN);
  // The network goes as soon as the app says it is ready for it: the first visit ends offline.
  await expect(page.locator('#app p').first()).toHaveText('Offline: ready', { timeout: 60_000 });
  timings['first visit: page load to "Offline: ready"'] = Math.round(performance.now() - started) / 1000;
  stop(server);
  await expect(fetch(ORIGIN)).rejects.toThrow(); // the server really is gone
  await expect(page.locator('#app p')).toHaveText(expected, { timeout: 60_000 });
  timings['first visit: page load to the last line'] = Math.round(performance.now() - started) / 1000;
  expect(chatTypes).toEqual(['text/event-stream']); // streamed, through Lantern's service worker
  expect(await page.evaluate(() => navigator.serviceWorker.controller?.scriptURL)).toBe(`${ORIGIN}/service-worker.js`);

  await page.reload();
  await expect(page.locator('#app p')).toHaveText(expected, { timeout: 60_000 });
  expect(chatTypes).toEqual(['text/event-stream', 'text/event-stream']);
  // Two loads, one key: the second load found the key the first one kept, rather than issuing another.
  expect(await storedKeys(page)).toEqual([{ name: 'my app', revoked: false }]);

  // Speech as OpenAI's SDK asks for it by default, still offline: mp3, whose encoder (LAME, from Lantern's dependency
  // wasm-media-encoders) the Vite plugin built beside the engine worker and the service worker precached.
  const speech = await defaultSpeech(page);
  expect(speech.sent).toEqual({ model: 'tts-1', voice: 'alloy', input: 'The red fox runs.' });
  expect(speech.type).toBe('audio/mpeg');
  expect(speech.seconds).toBeGreaterThan(0.3); // a short sentence of speech, not an empty file
});

test('`npm run dev` serves the same app, with Lantern working', async ({ page }) => {
  server = await serve('dev');
  await page.goto(ORIGIN);
  // Nothing is precached in dev: the app never says it is ready to work offline.
  const lines = [
    /^Offline: (getting ready…|not available \(not in the service worker's caches: .*\))$/,
    ...expectedLines().slice(1),
  ];
  await expect(page.locator('#app p')).toHaveText(lines, { timeout: 60_000 });
  expect(await page.evaluate(() => navigator.serviceWorker.controller?.scriptURL)).toBe(`${ORIGIN}/service-worker.js`);
  stop(server);
});

test("the same app in WebKit (Safari's engine), online and offline", async () => {
  server = await serve('preview');
  const driver = await launchWebKitDriver(workerPort(4444));
  try {
    const session = await driver.newSession();
    const tab = await webkitTab(session, ORIGIN);
    const lines = () => tab.evaluate(() => [...document.querySelectorAll('#app p')].map((p) => p.textContent));
    await tab.goto(ORIGIN);
    await expect.poll(async () => (await lines())[0], { timeout: 60_000 }).toBe('Offline: ready');
    stop(server);
    await expect.poll(lines, { timeout: 60_000 }).toEqual(expectedLines());
    expect(await tab.evaluate(() => navigator.serviceWorker.controller?.scriptURL)).toBe(`${ORIGIN}/service-worker.js`);

    await expect(fetch(ORIGIN)).rejects.toThrow();
    await tab.reload();
    await expect.poll(lines, { timeout: 60_000 }).toEqual(expectedLines());
    await session.quit();
  } finally {
    await driver.close();
  }
});

/** A plain static file server, as an app built without Vite might use. */
async function serveFolder(root: string): Promise<Server> {
  const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript' };
  const files = createServer((request, response) => {
    const path = decodeURIComponent(new URL(request.url ?? '/', ORIGIN).pathname);
    const file = join(root, path.endsWith('/') ? `${path}index.html` : path);
    try {
      const body = readFileSync(file);
      response.setHeader('content-type', types[extname(file)] ?? 'application/octet-stream');
      response.end(body);
    } catch {
      response.statusCode = 404;
      response.end();
    }
  });
  await new Promise<void>((done) => files.listen(PORT, '127.0.0.1', done));
  return files;
}

test("without Vite: the package's prebuilt service worker and engine worker, served as files, online and offline", async ({
  page,
}) => {
  // A site with no Vite plugin: docs/api.md's "Without Vite" commands copy Lantern's prebuilt files into its web root,
  // beside a page bundled elsewhere (here: the quick start's page, whose bundle holds lantern/client).
  const site = join(folder, 'plain');
  mkdirSync(join(site, 'public'), { recursive: true });
  symlinkSync(join(app, 'node_modules'), join(site, 'node_modules'));
  for (const command of readSnippets('docs/api.md', '### Without Vite').commands) execSync(command, { cwd: site });
  cpSync(join(app, 'dist', 'index.html'), join(site, 'public', 'index.html'));
  cpSync(join(app, 'dist', 'assets'), join(site, 'public', 'assets'), { recursive: true });

  const files = await serveFolder(join(site, 'public'));
  try {
    await page.goto(ORIGIN);
    // That service worker keeps the app's files as it serves them, and those the first load fetched before it
    // controlled the page once Lantern asks it to: the first visit is enough.
    await expect(page.locator('#app p')).toHaveText(expectedLines(), { timeout: 60_000 });
  } finally {
    files.closeAllConnections();
    await new Promise((done) => files.close(done));
  }
  await expect(fetch(ORIGIN)).rejects.toThrow();
  await page.reload();
  await expect(page.locator('#app p')).toHaveText(expectedLines(), { timeout: 60_000 });
});
