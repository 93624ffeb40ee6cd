import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Tab } from './browsers.ts';

/**
 * WebKit (Safari's engine) for the end-to-end suite: Debian's WebKitGTK MiniBrowser, driven by its W3C WebDriver
 * server (`WebKitWebDriver`, from `webkit2gtk-driver`) under `xvfb-run`, over the protocol directly: the suite needs a
 * dozen commands, fewer than a client library's own dependencies.
 *
 * What WebDriver gives differs from Playwright's and puppeteer's pages in ways a portable test must respect:
 * - one command at a time per session: while a tab evaluates a script, every other command waits, so a test must not
 *   leave an evaluation pending while it drives the page further (record into `window` and read it back instead);
 * - the dedicated workers of a tab cannot be listed (`Tab.workers` is absent);
 * - page errors are not reported (the driver's log has them: `WEBKIT_DRIVER_LOG`).
 * WebKitWebDriver allows one session at a time; each session is a fresh, ephemeral profile, so a session is a browser
 * context: the `tabs` fixture opens one per test.
 */

/** Where Debian's libwebkit2gtk-4.1-0 installs MiniBrowser (`dpkg -L libwebkit2gtk-4.1-0 | grep MiniBrowser`). */
function miniBrowser(): string {
  if (process.env.WEBKIT_MINIBROWSER) return process.env.WEBKIT_MINIBROWSER;
  const known = '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser';
  if (existsSync(known)) return known;
  try {
    const files = execFileSync('dpkg', ['-L', 'libwebkit2gtk-4.1-0'], { encoding: 'utf8' }).split('\n');
    const found = files.find((file) => file.endsWith('/MiniBrowser'));
    if (found) return found;
  } catch {
    // not installed: the error below says what to install
  }
  throw new Error(
    'WebKitGTK MiniBrowser not found: apt-get install -y webkit2gtk-driver xvfb (or set WEBKIT_MINIBROWSER)',
  );
}

interface WireError {
  error: string;
  message: string;
}

/** A WebDriver server: WebKitWebDriver on a display of its own (xvfb-run), stopped with `close`. */
export interface WebKitDriver {
  newSession(): Promise<WebKitSession>;
  close(): Promise<void>;
}

/**
 * Launches WebKitWebDriver under xvfb-run on `port` (4444 by default) and waits until it accepts sessions. A driver
 * still busy with the last test's session when the next asks for one (a page that hung an evaluation) is replaced.
 */
export async function launchWebKitDriver(port = Number(process.env.WEBKIT_DRIVER_PORT ?? 4444)): Promise<WebKitDriver> {
  const binary = miniBrowser();
  const base = `http://127.0.0.1:${port}`;

  const command = async <T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> => {
    const response = await fetch(base + path, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
    const { value } = (await response.json()) as { value: T | WireError };
    const error = value as WireError | null;
    if (error && typeof error === 'object' && typeof error.error === 'string') {
      throw new Error(`WebDriver ${method} ${path}: ${error.error}: ${error.message}`);
    }
    return value as T;
  };
  const ready = () =>
    command<{ ready: boolean }>('GET', '/status').then(
      (status) => status.ready,
      () => false,
    );

  let child: ChildProcess | undefined;
  const start = async () => {
    const log = process.env.WEBKIT_DRIVER_LOG ? 'inherit' : 'ignore';
    // Its own process group, so that stopping it stops xvfb-run, Xvfb, the driver and its browser together.
    const launched = spawn('xvfb-run', ['-a', 'WebKitWebDriver', `--port=${port}`], {
      detached: true,
      stdio: ['ignore', log, log],
    });
    child = launched;
    // Detached, so it would outlive a test run that exits without closing it: stopped with this process.
    const orphaned = () => launched.pid && launched.exitCode === null && process.kill(-launched.pid, 'SIGKILL');
    process.once('exit', orphaned);
    launched.once('exit', () => process.off('exit', orphaned));
    let exited: string | undefined;
    launched.on('exit', (code, signal) => (exited = `exited (${signal ?? code})`));
    launched.on('error', (error) => {
      exited = `could not start: ${error.message} (apt-get install -y webkit2gtk-driver xvfb)`;
    });
    const deadline = Date.now() + 30_000;
    while (!(await ready())) {
      if (exited) throw new Error(`WebKitWebDriver ${exited}`);
      if (Date.now() > deadline) throw new Error(`WebKitWebDriver did not answer on ${base} within 30 s`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };
  const stop = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null || running.pid === undefined) return;
    const gone = new Promise((resolve) => running.once('exit', resolve));
    try {
      process.kill(-running.pid, 'SIGKILL');
    } catch {
      return;
    }
    await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, 5000))]);
  };
  await start();

  return {
    async newSession() {
      // A driver can fail while it starts the session's browser (seen on CI: the socket closed under POST /session,
      // after its /status had answered ready): it is replaced and the session asked for again, twice at most.
      let failure: unknown;
      for (let attempt = 0; attempt < 3; attempt++) {
        if (attempt > 0 || !(await ready())) {
          await stop();
          await start();
        }
        try {
          const { sessionId, capabilities } = await command<{
            sessionId: string;
            capabilities: { browserVersion?: string };
          }>(
            'POST',
            '/session',
            {
              capabilities: {
                alwaysMatch: {
                  browserName: 'MiniBrowser',
                  'webkitgtk:browserOptions': { binary, args: ['--automation'] },
                },
              },
            },
            AbortSignal.timeout(60_000),
          );
          return await openedSession(sessionId, capabilities.browserVersion);
        } catch (error) {
          failure = error;
        }
      }
      throw new Error('WebKitWebDriver could not start a session three times', { cause: failure });
    },
    close: stop,
  };

  async function openedSession(sessionId: string, browserVersion: string | undefined): Promise<WebKitSession> {
    const session = new WebKitSession(
      (method, path, body) => command(method, `/session/${sessionId}${path}`, body),
      `WebKitGTK ${browserVersion ?? 'unknown'}`,
    );
    // Scripts run as long as a test allows (model loads, long generations); the test's own timeout bounds them.
    await session.send('POST', '/timeouts', { script: 600_000, pageLoad: 120_000 });
    return session;
  }
}

type Send = <T>(method: string, path: string, body?: unknown) => Promise<T>;

/**
 * One WebDriver session: a fresh profile whose windows are the tabs of a test. Commands go one at a time, each to its
 * window: the session switches to a tab's window before every command that tab sends.
 */
export class WebKitSession {
  #queue: Promise<unknown> = Promise.resolve();
  #current: string | undefined;
  #windows = 0;

  constructor(
    private readonly sendRaw: Send,
    /** The browser and its version, as the driver reports them. */
    readonly version: string,
  ) {}

  send<T>(method: string, path: string, body?: unknown): Promise<T> {
    return this.sendRaw<T>(method, path, body);
  }

  /** Runs `run` after every command queued before it, whether they succeeded or not. */
  #enqueue<T>(run: () => Promise<T>): Promise<T> {
    const result = this.#queue.then(run, run);
    this.#queue = result.catch(() => undefined);
    return result;
  }

  /** Runs `command` in `window`, after every command sent before it. */
  in<T>(window: string, command: (send: Send) => Promise<T>): Promise<T> {
    return this.#enqueue(async () => {
      if (this.#current !== window) {
        await this.sendRaw('POST', '/window', { handle: window });
        this.#current = window;
      }
      return command(this.sendRaw);
    });
  }

  /** A new window: the session's own first one for the first tab, a new one after. */
  openWindow(): Promise<string> {
    return this.#enqueue(async () => {
      if (this.#windows++ === 0) {
        this.#current = await this.sendRaw<string>('GET', '/window');
        return this.#current;
      }
      const { handle } = await this.sendRaw<{ handle: string }>('POST', '/window/new', { type: 'window' });
      return handle;
    });
  }

  /** Closes `window`; the session itself stays until `quit` (closing its last window would end it). */
  closeWindow(window: string): Promise<void> {
    return this.in(window, async (send) => {
      const left = await send<string[]>('GET', '/window/handles');
      if (left.length === 1) {
        // The last window: leave it on a blank page rather than end the session under the fixture.
        await send('POST', '/url', { url: 'about:blank' });
        return;
      }
      await send('DELETE', '/window');
      this.#current = undefined;
    });
  }

  /**
   * Ends the session, after the commands sent before (a few seconds at most: a page that hung an evaluation leaves
   * the session to the driver, which the next `newSession` replaces).
   */
  async quit(): Promise<void> {
    const settled = await Promise.race([
      this.#queue.then(() => true),
      new Promise<false>((resolve) => setTimeout(() => resolve(false), 5000)),
    ]);
    if (settled) await this.sendRaw('DELETE', '').catch(() => undefined);
  }
}

/**
 * A window of a WebDriver session in WebKit as a `Tab`. Every operation is a WebDriver command, sent one at a time
 * (see above): an evaluation left pending blocks the tab's later operations, and every other tab's.
 */
export async function webkitTab(session: WebKitSession, baseURL: string | undefined): Promise<Tab> {
  const window = await session.openWindow();
  const evaluate = <R>(fn: (arg: unknown) => R | Promise<R>, arg?: unknown): Promise<R> =>
    session.in(window, async (send) => {
      const result = await send<EvaluationResult>('POST', '/execute/async', {
        script: evaluationScript(fn.toString()),
        args: [arg ?? null],
      });
      if ('error' in result) throw new Error(`evaluate in WebKit: ${result.error}`);
      return ('ok' in result ? JSON.parse(result.ok) : undefined) as R;
    });
  return {
    goto: (url) => session.in(window, (send) => send('POST', '/url', { url: new URL(url, baseURL).href })),
    reload: () => session.in(window, (send) => send('POST', '/refresh', {})),
    close: () => session.closeWindow(window),
    evaluate: evaluate as Tab['evaluate'],
    async waitForFunction(fn, _arg, options) {
      const deadline = Date.now() + (options?.timeout || Infinity);
      const poll = `return Boolean((${fn.toString()})())`;
      while (
        !(await session.in(window, (send) => send<boolean>('POST', '/execute/sync', { script: poll, args: [] })))
      ) {
        if (Date.now() > deadline) throw new Error(`waitForFunction: ${options!.timeout} ms passed`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return true;
    },
    // WebDriver reports no page errors: the driver's log has them (WEBKIT_DRIVER_LOG=1).
    on: () => undefined,
  };
}

/**
 * The in-page wrapper of an evaluated function: awaits it and hands back its result as JSON, or
 * its error's message, through WebDriver's async callback.
 */
export function evaluationScript(source: string): string {
  return `const done = arguments[arguments.length - 1];
Promise.resolve().then(() => (${source})(arguments[0])).then(
  (value) => done(value === undefined ? { undefined: true } : { ok: JSON.stringify(value) }),
  (error) => done({ error: error instanceof Error ? error.name + ': ' + error.message : String(error) }),
);`;
}

/** What `evaluationScript` hands back. */
export type EvaluationResult = { ok: string } | { undefined: true } | { error: string };
