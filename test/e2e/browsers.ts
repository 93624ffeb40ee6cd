import { test as base, type Browser, type BrowserContext, type Page } from '@playwright/test';
import type { Browser as PuppeteerBrowser } from 'puppeteer-core';
import { firefoxTab, startFirefox } from './firefox-driver.ts';
import { logEngineState } from './harness-page.ts';
import { workerPort } from './servers.ts';
import { launchWebKitDriver, type WebKitDriver, webkitTab } from './webkit-driver.ts';

/**
 * The browsers of the end-to-end suite, behind one small layer, so that a spec is written once and runs in every
 * project: Debian's Chromium driven by Playwright (the `wasm` and `webgpu` projects, each with its own launch options),
 * Debian's firefox-esr driven by puppeteer-core over WebDriver BiDi (the `firefox` project: Playwright cannot drive
 * a stock Firefox), and Debian's WebKitGTK MiniBrowser driven over W3C WebDriver (the `webkit` project: Safari's
 * engine; see webkit-driver.ts). A test that uses only the `tab` and `tabs` fixtures, and only the `Tab` operations
 * below, is portable: tag it `PORTABLE` and the firefox and webkit projects run it too. Tests that need more of
 * Playwright (CDP, locators, request interception, console events) keep using `page` and `context` and run in the
 * Chromium projects only.
 */

/** The tag of the tests that the firefox and webkit projects run: those written with `tab` and `tabs` only. */
export const PORTABLE = '@portable';

/**
 * A tab: the page operations the portable tests use. Playwright's `Page` is one as it is; in Firefox, puppeteer-core's
 * page behind an adapter. `goto` takes a URL relative to the project's `baseURL`, or an absolute one.
 */
export interface Tab {
  goto(url: string): Promise<unknown>;
  reload(): Promise<unknown>;
  close(): Promise<void>;
  evaluate<R>(fn: () => R | Promise<R>): Promise<R>;
  evaluate<R, A>(fn: (arg: A) => R | Promise<R>, arg: A): Promise<R>;
  waitForFunction(fn: () => unknown, arg?: undefined, options?: { timeout?: number }): Promise<unknown>;
  /**
   * The dedicated workers this tab runs (Lantern's engine worker, in the host tab); absent where the browser's driver
   * cannot list them (WebDriver).
   */
  workers?(): readonly unknown[];
  on(event: 'pageerror', listener: (error: Error) => void): unknown;
}

/** A browser context (its own service worker, caches and IndexedDB), in which a test opens tabs. */
export interface Tabs {
  newPage(): Promise<Tab>;
}

export type LanternBrowser = 'chromium' | 'firefox' | 'webkit';

/** The options a project sets in `use`. */
export interface LanternOptions {
  /** Which browser the project runs: Playwright's Chromium (with the project's launch options), or Firefox. */
  lanternBrowser: LanternBrowser;
  /** The engine device Lantern finds in this project's browser: `webgpu` where it offers an adapter, else `wasm`. */
  device: 'wasm' | 'webgpu';
  /**
   * The only engines the bundled profile keeps (`bundledProfile(…, { engines })`, the harness's `?engines=`), or all:
   * the `llama.cpp` project runs the shared tests on llama.cpp alone.
   */
  engines: string | undefined;
}

interface WorkerFixtures extends LanternOptions {
  /** Launch the project's browser on first call, once per worker; what was launched closes with the worker. */
  launchChromium: () => Promise<Browser>;
  launchFirefox: () => Promise<PuppeteerBrowser>;
  launchWebKit: () => Promise<WebKitDriver>;
  /** The profile that tests which need no fresh one share (`profileScope: 'shared'`), held by the worker. */
  sharedProfile: SharedProfile;
}

interface TestFixtures {
  /**
   * How long a browser profile (its service worker and the app it stored, caches, IndexedDB, the tab that hosts the
   * engine and the models loaded there) lives: `'test'`, a fresh one for each test (the default); or `'shared'`, one
   * kept from a test to the next of the tests that say so, one file after another, until a test that needs its own
   * starts (WebKit's driver holds one session at a time). A first visit (the service worker's install stores the
   * whole app: about 4 s) and the models' loads are then paid once for all of them. A file whose tests do not depend
   * on a fresh profile (a first visit, storage, a service worker's or a tab's lifecycle) says
   * `test.use({ profileScope: 'shared' })`. Those tests share `tab` (Playwright's `page`: the same tab), which stays
   * open from one test to the next; the tabs a test opens beside it close when it ends, and a profile whose shared tab
   * a test closed is replaced by a fresh one. Each test issues its own keys, which keep its prompts' caches and its
   * stored objects apart.
   */
  profileScope: 'test' | 'shared';
  /** A browser context of the project's browser: fresh for each test, or the shared one (see `profileScope`). */
  tabs: Tabs;
  /** A tab in `tabs` (nothing loaded yet in a fresh profile; in the shared one, what the last test left open). */
  tab: Tab;
  /** What opens a profile of the project's browser, for the test's options (its baseURL, its service workers). */
  profileLaunchers: ProfileLaunchers;
}

/** A lazily launched browser: `get` launches it on first use; `close` closes it if it was. */
function lazy<B extends { close(): Promise<unknown> }>(launch: () => Promise<B>) {
  let launched: Promise<B> | undefined;
  return {
    get: () => (launched ??= launch()),
    close: async () => void (await (await launched?.catch(() => undefined))?.close()),
  };
}

/** A browser profile of the project's browser: where tabs open, each tracked until it closes, and how it ends. */
interface Profile {
  newPage(): Promise<Tab>;
  /** The tabs opened in it and not closed since. */
  open: Set<Tab>;
  /** Chromium's: Playwright's context, for the tests that use `context` and `page`. */
  context?: BrowserContext;
  close(): Promise<void>;
}

interface ProfileLaunchers {
  lanternBrowser: LanternBrowser;
  launchChromium: () => Promise<Browser>;
  launchFirefox: () => Promise<PuppeteerBrowser>;
  launchWebKit: () => Promise<WebKitDriver>;
  baseURL: string | undefined;
  serviceWorkers: 'allow' | 'block';
}

async function openProfile(launchers: ProfileLaunchers): Promise<Profile> {
  const { lanternBrowser, baseURL, serviceWorkers } = launchers;
  const open = new Set<Tab>();
  const tracked = (tab: Tab): Tab => {
    open.add(tab);
    const close = tab.close.bind(tab);
    tab.close = async () => {
      open.delete(tab);
      await close();
    };
    return tab;
  };
  if (lanternBrowser === 'chromium') {
    const context = await (await launchers.launchChromium()).newContext({ baseURL, serviceWorkers });
    // Pages opened through `context` directly (Playwright's own fixtures, popups) are tracked too.
    context.on('page', (page) => {
      open.add(page);
      page.once('close', () => open.delete(page));
    });
    return { newPage: () => context.newPage(), open, context, close: () => context.close() };
  }
  if (lanternBrowser === 'webkit') {
    const session = await (await launchers.launchWebKit()).newSession();
    return { newPage: async () => tracked(await webkitTab(session, baseURL)), open, close: () => session.quit() };
  }
  const context = await (await launchers.launchFirefox()).createBrowserContext();
  return {
    newPage: async () => tracked(firefoxTab(await context.newPage(), baseURL)),
    open,
    close: () => context.close(),
  };
}

/**
 * The profile that tests share (see `profileScope`), held by the worker: opened at the first test that asks for it,
 * closed when a test opens a profile of its own, or when the worker ends. Its first tab is those tests' `tab`.
 */
class SharedProfile {
  #profile: Promise<Profile> | undefined;
  #tab: Tab | undefined;

  /** The shared profile; `launchers` opens it where none is open (or a test broke it: closed its tab). */
  async get(launchers?: ProfileLaunchers): Promise<{ profile: Profile; tab: () => Promise<Tab> }> {
    const current = this.#profile && (await this.#profile.catch(() => undefined));
    if (!current || (this.#tab !== undefined && !current.open.has(this.#tab))) {
      if (!launchers) throw new Error('no shared profile is open');
      await this.close();
      this.#profile = openProfile(launchers);
    }
    const profile = await this.#profile!;
    return { profile, tab: async () => (this.#tab ??= await profile.newPage()) };
  }

  async close(): Promise<void> {
    const profile = this.#profile;
    this.#profile = undefined;
    this.#tab = undefined;
    await (await profile?.catch(() => undefined))?.close();
  }
}

/**
 * Runs a test (`run`) in the shared profile; the tabs it opened beside the shared `kept` one close when it ends, as
 * its own profile would have.
 */
async function closingWhatTheTestOpens(profile: Profile, kept: Tab, run: () => Promise<void>): Promise<void> {
  const before = new Set(profile.open);
  await run();
  for (const opened of [...profile.open]) if (opened !== kept && !before.has(opened)) await opened.close();
}

export const test = base.extend<TestFixtures, WorkerFixtures>({
  lanternBrowser: ['chromium', { scope: 'worker', option: true }],
  device: ['wasm', { scope: 'worker', option: true }],
  engines: [undefined, { scope: 'worker', option: true }],
  profileScope: ['test', { option: true }],

  launchChromium: [
    async ({ playwright, lanternBrowser, launchOptions }, use) => {
      const chromium = lazy(() => {
        if (lanternBrowser !== 'chromium') {
          const only = `a test tagged ${PORTABLE} uses tab and tabs, not page, context or browser`;
          throw new Error(`the ${lanternBrowser} project does not launch Playwright's Chromium: ${only}`);
        }
        // As Playwright's own `browser` fixture launches it (its defaults: headless or --headed), with the project's
        // launch options (executable, flags such as --enable-unsafe-webgpu).
        return playwright.chromium.launch(launchOptions);
      });
      await use(chromium.get);
      await chromium.close();
    },
    { scope: 'worker' },
  ],
  launchFirefox: [
    async ({ lanternBrowser, headless }, use) => {
      const firefox = lazy(() => {
        if (lanternBrowser !== 'firefox') throw new Error(`the ${lanternBrowser} project does not launch Firefox`);
        return startFirefox(headless);
      });
      await use(firefox.get);
      await firefox.close();
    },
    { scope: 'worker' },
  ],
  launchWebKit: [
    async ({ lanternBrowser }, use, { parallelIndex }) => {
      const webkit = lazy(async () => {
        if (lanternBrowser !== 'webkit') throw new Error(`the ${lanternBrowser} project does not launch WebKit`);
        return launchWebKitDriver(workerPort(4444, parallelIndex));
      });
      await use(webkit.get);
      await webkit.close();
    },
    { scope: 'worker' },
  ],
  // Closed before the browsers (fixtures tear down in the reverse order of their setup, and it needs them).
  sharedProfile: [
    async ({ launchChromium, launchFirefox, launchWebKit }, use) => {
      void [launchChromium, launchFirefox, launchWebKit];
      const profile = new SharedProfile();
      await use(profile);
      await profile.close();
    },
    { scope: 'worker' },
  ],
  // Playwright's `browser` (behind `page` and `context`) is the same Chromium as the one behind `tabs`: one per worker.
  browser: [async ({ launchChromium }, use) => use(await launchChromium()), { scope: 'worker', timeout: 0 }],

  profileLaunchers: async (
    { lanternBrowser, launchChromium, launchFirefox, launchWebKit, baseURL, serviceWorkers },
    use,
  ) => use({ lanternBrowser, launchChromium, launchFirefox, launchWebKit, baseURL, serviceWorkers }),
  tabs: async ({ profileScope, sharedProfile, profileLaunchers: launchers }, use) => {
    if (profileScope === 'test') {
      await sharedProfile.close();
      const profile = await openProfile(launchers);
      await use(profile.context ?? { newPage: () => profile.newPage() });
      await profile.close();
      return;
    }
    const { profile, tab } = await sharedProfile.get(launchers);
    await closingWhatTheTestOpens(profile, await tab(), () => use(profile.context ?? { newPage: profile.newPage }));
  },
  tab: async ({ tabs, profileScope, sharedProfile }, use, info) => {
    // In the shared profile, `tabs` has opened (or kept) it: its first tab is the test's.
    const tab = profileScope === 'test' ? await tabs.newPage() : await (await sharedProfile.get()).tab();
    await use(tab);
    if (info.status !== info.expectedStatus) await logEngineState(tab);
  },
  // Playwright's `context` and `page` (Chromium only), as Playwright makes them (a context with the project's
  // baseURL, its page), or in the shared profile its context and shared tab.
  context: async (
    { profileScope, sharedProfile, profileLaunchers: launchers, launchChromium, baseURL, serviceWorkers },
    use,
  ) => {
    if (profileScope === 'test') {
      await sharedProfile.close();
      const context = await (await launchChromium()).newContext({ baseURL, serviceWorkers });
      await use(context);
      await context.close();
      return;
    }
    const { profile, tab } = await sharedProfile.get(launchers);
    await closingWhatTheTestOpens(profile, await tab(), () => use(profile.context!));
  },
  page: async ({ context, profileScope, sharedProfile }, use) => {
    if (profileScope === 'test') return use(await context.newPage());
    await use((await (await sharedProfile.get()).tab()) as Page);
  },
});

export { expect } from '@playwright/test';
