import { expect, test } from '@playwright/test';
import { execSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/**
 * The README's quick start, exactly as a newcomer follows it: its commands and files are read from README.md (so they
 * cannot drift), in a fresh folder, with Lantern installed from the tarball `npm pack` makes of this repository. The
 * app builds with its own default tsconfig, then in Chromium it lists the models, streams a chat, embeds, and still
 * does all three after a reload with its server gone. It needs the npm registry (create-vite, vite, typescript, openai).
 */
const PORT = 4197;
const ORIGIN = `http://127.0.0.1:${PORT}`;
/** What `npm create vite@latest` runs, pinned so that CI scaffolds the same app every time. */
const CREATE_VITE = '9.3.0';

interface QuickStart {
  commands: string[];
  files: Map<string, string>;
}

/**
 * The "Quick start" section of README.md: the lines of its `sh` blocks (comments dropped) are commands, and each `ts`
 * block whose first line is `// path` is the file at that path.
 */
function readQuickStart(): QuickStart {
  const readme = readFileSync('README.md', 'utf8');
  const section = readme.slice(
    readme.indexOf('\n## Quick start'),
    readme.indexOf('\n## ', readme.indexOf('\n## Quick start') + 1),
  );
  const commands: string[] = [];
  const files = new Map<string, string>();
  for (const [, lang, body] of section.matchAll(/```(\w+)\n([\s\S]*?)```/g)) {
    if (lang === 'sh') {
      commands.push(
        ...body!
          .split('\n')
          .map((line) => line.replace(/\s+#.*$/, '').trim())
          .filter(Boolean),
      );
    } else if (lang === 'ts' && body!.startsWith('// ')) {
      files.set(body!.slice(3, body!.indexOf('\n')).trim(), body!);
    }
  }
  return { commands, files };
}

const quickStart = readQuickStart();
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
let preview: ChildProcess | undefined;

test.beforeAll(async () => {
  test.setTimeout(600_000);
  folder = mkdtempSync(join(tmpdir(), 'lantern-quickstart-'));
  // The package as it would be published: `npm pack` runs `prepack`, which builds dist/.
  const tarball = timed('npm pack (builds dist/)', () =>
    resolve(
      folder,
      JSON.parse(execSync(`npm pack --json --pack-destination ${folder}`, { encoding: 'utf8' }))[0].filename,
    ),
  );
  let cwd = folder;
  const env = { ...process.env, npm_config_yes: 'true', npm_config_fund: 'false', npm_config_audit: 'false' };
  for (const command of quickStart.commands) {
    if (command.startsWith('cd ')) {
      cwd = resolve(cwd, command.slice(3));
      continue;
    }
    if (command.startsWith('npm run preview')) break; // started below, on the test's port
    const run = command
      .replace('create vite@latest', `create vite@${CREATE_VITE}`)
      .replace(/^npm install lantern\b/, `npm install ${tarball}`);
    timed(command, () => execSync(run, { cwd, env, stdio: ['ignore', 'inherit', 'inherit'] }));
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
  preview?.kill();
  console.log('Quick start, seconds per step:', timings);
  if (folder) rmSync(folder, { recursive: true, force: true });
});

/** `npm run preview`, as the README says, on the test's port; resolves once it answers. */
async function startPreview(): Promise<ChildProcess> {
  const child = spawn('npm', ['run', 'preview', '--', '--host', '127.0.0.1', '--port', String(PORT), '--strictPort'], {
    cwd: app,
    stdio: 'ignore',
    detached: true,
  });
  await expect
    .poll(
      () =>
        fetch(ORIGIN).then(
          (r) => r.ok,
          () => false,
        ),
      { timeout: 30_000 },
    )
    .toBe(true);
  return child;
}

function stopPreview(child: ChildProcess) {
  process.kill(-child.pid!); // npm and the vite it started
}

test('the README quick start: a fresh Vite app lists the models, streams a chat and embeds, online and offline', async ({
  page,
}) => {
  expect(quickStart.commands.length).toBeGreaterThan(3);
  expect([...quickStart.files.keys()].sort()).toEqual(['src/main.ts', 'vite.config.ts']);
  const reference = JSON.parse(readFileSync('public/models/tiny-chat/reference.json', 'utf8')) as {
    messages: { content: string }[];
    greedy_text: string;
  }[];
  const count = reference.find((r) => r.messages.at(-1)!.content === 'Count to 10.')!.greedy_text;
  const expected = [
    'Models: crimson-falcon-4, indigo-owl-4, amber-phoenix-4, jade-mole-4',
    `Chat: ${count}`,
    'Embeddings: 2 vectors of 64 numbers',
  ].join('\n');

  preview = await startPreview();
  const chatTypes: string[] = [];
  page.on('response', (response) => {
    if (response.url().endsWith('/v1/chat/completions')) chatTypes.push(response.headers()['content-type'] ?? '');
  });
  page.on('pageerror', (error) => console.log(`[page error] ${error.message}`));

  const started = performance.now();
  await page.goto(ORIGIN);
  await expect(page.locator('#app')).toHaveText(expected, { timeout: 60_000 });
  timings['first visit: page load to the last line'] = Math.round(performance.now() - started) / 1000;
  expect(chatTypes).toEqual(['text/event-stream']); // streamed, through Lantern's service worker
  expect(await page.evaluate(() => navigator.serviceWorker.controller?.scriptURL)).toBe(`${ORIGIN}/service-worker.js`);
  await page.evaluate(async () => void (await navigator.serviceWorker.ready));

  stopPreview(preview);
  preview = undefined;
  await expect(fetch(ORIGIN)).rejects.toThrow(); // the server really is gone
  await page.reload();
  await expect(page.locator('#app')).toHaveText(expected, { timeout: 60_000 });
  expect(chatTypes).toEqual(['text/event-stream', 'text/event-stream']);
});
