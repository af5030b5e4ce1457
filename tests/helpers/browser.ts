/**
 * Headless Chromium for the admin UI's tests: Debian's chromium-headless-shell
 * driven by playwright-core (never a downloaded browser), the UI built from
 * source if stale, screenshots into tests/artifacts/admin/, console errors
 * collected so a test can assert there were none; a server with a UI user to
 * start from, and logging in.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';
import { hashPassword } from '../../src/admin/password.ts';
import { diskAssetSource } from '../../src/admin/static-assets.ts';
import { testScrypt } from './admin.ts';
import { registerSecret } from './secret-log.ts';
import { startTestServer, type TestServer, type TestServerOptions } from './server.ts';
import { startsProcess } from './test-run.ts';

export const root = new URL('../..', import.meta.url).pathname;
/**
 * Debian's chromium-headless-shell: Chromium's engine without the browser's own UI (as
 * Playwright's own headless runs use), from the same source and version as Debian's chromium.
 * The full /usr/bin/chromium in headless mode cost about twice the CPU: 24.6 s against 10.5 s
 * for 8 of the browser files in one process (its launch, contexts, page loads, polls; load
 * 25-40, 2026-12-06), nearly all of it in the browser process.
 */
export const chromiumPath = '/usr/bin/chromium-headless-shell';
export const artifacts = join(root, 'tests/artifacts/admin');
export const desktop = { width: 1280, height: 800 };
export const phone = { width: 375, height: 740 };

/**
 * Whether ui/dist is known to be fresh: checked by this process already (a group's files share a
 * process), or built by the run before any browser file started (scripts/run-tests.mjs).
 */
let uiChecked = process.env.SEPP_TEST_UI_BUILT === '1';

/**
 * Builds ui/dist when its sources changed (the test serves it from disk), once a process: each
 * check started a node process (~0.17 s of CPU), once per browser file of a group.
 */
export function buildUi(): void {
  if (uiChecked) return;
  const built = spawnSync(process.execPath, [join(root, 'scripts/build-ui.mjs'), '--if-stale'], {
    encoding: 'utf8',
  });
  assert.equal(built.status, 0, `building the UI failed:\n${built.stdout}${built.stderr}`);
  uiChecked = true;
}

const launchOptions = {
  executablePath: chromiumPath,
  headless: true,
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
  ],
};

/** The Chromium the files of a runner's group share (scripts/test-groups.mjs closes it). */
let shared: Promise<Browser> | undefined;

/**
 * A browser context of its own for a test file: in a group of the runner
 * (scripts/test-groups.mjs), a fresh context of the one Chromium its files share,
 * closed after the group's last file (a launch is ~1 s of CPU); alone, a Chromium with
 * a profile in `profileDir`, closed with the context.
 */
export async function launchBrowser(profileDir: string): Promise<BrowserContext> {
  startsProcess('Chromium');
  if (!existsSync(chromiumPath)) {
    throw new Error(
      `${chromiumPath} is missing: install Debian's chromium-headless-shell (apt-get install -y chromium-headless-shell; scripts/test-deps.sh does it). This test never downloads a browser.`,
    );
  }
  mkdirSync(artifacts, { recursive: true });
  const groupEnd = (globalThis as Record<symbol, unknown>)[Symbol.for('sepp.test.groupEnd')];
  if (!Array.isArray(groupEnd)) {
    return chromium.launchPersistentContext(profileDir, { ...launchOptions, viewport: desktop });
  }
  shared ??= chromium.launch(launchOptions).then((browser) => {
    groupEnd.push(() => browser.close());
    return browser;
  });
  return (await shared).newContext({ viewport: desktop });
}

/** The page's window, as far as `visit` uses it. */
interface InPage {
  history: { pushState(state: null, unused: string, url: string): void };
  dispatchEvent(event: unknown): void;
  PopStateEvent: new (type: string) => unknown;
  scrollTo(x: number, y: number): void;
  MessageChannel: new () => {
    port1: { onmessage: (() => void) | null };
    port2: { postMessage(message: null): void };
  };
}

/**
 * Opens `url` (`${adminUrl}/jobs?queue=mail`) as a link of the UI does, without loading the page
 * again: the app's router moves to it (the History API, as the browser's back button does), and
 * this returns once the app has drawn the page it leads to (loading its data, as a link's page
 * does). A page load cost ~0.3 s of CPU in Chromium's processes, this ~0.1 s (2026-12-06, 30 of
 * each, load 20). Loaded with page.goto: a page not showing the UI yet (a new one); one in the
 * same part of the UI (`/queues/a` to `/queues/b`, `/jobs?state=dead` to `/jobs/ID`: the same
 * page may stay drawn with the old answer until the new one arrives, and a test would read it);
 * the same URL (the test wants it read afresh: a reload).
 */
export async function visit(page: Page, url: string): Promise<void> {
  const target = new URL(url);
  const at = page.url() === 'about:blank' ? null : new URL(page.url());
  const part = (u: URL) => u.pathname.split('/')[1];
  if (at === null || at.origin !== target.origin || part(at) === part(target)) {
    await page.goto(url);
    return;
  }
  await followLink(page, url);
}

/**
 * Moves the page's app to `url` as a link of the UI does (the History API), also within the same
 * page (`/jobs?type=a` to `/jobs?type=b`: the page stays and takes the new address), and returns
 * once the app has drawn it, before its data has come.
 */
export async function followLink(page: Page, url: string): Promise<void> {
  const target = new URL(url);
  await page.evaluate(async (to) => {
    // Tests are type-checked without the DOM library.
    const w = globalThis as unknown as InPage;
    w.history.pushState(null, '', to);
    w.dispatchEvent(new w.PopStateEvent('popstate'));
    w.scrollTo(0, 0);
    // The app draws in a microtask after the location changes; a message is a task after it
    // (timers may be on a test's paused clock, a MessageChannel is not).
    await new Promise<void>((drawn) => {
      const channel = new w.MessageChannel();
      channel.port1.onmessage = () => drawn();
      channel.port2.postMessage(null);
    });
  }, target.pathname + target.search);
}

/**
 * Clicks the button named `button` (exactly, or matching a RegExp) of the open dialog `dialog`, its
 * confirmation or the one that backs out, and waits until no dialog is open: a confirmation closes
 * once the server has answered. Until then the dialog's buttons are still found by name beside the
 * page's (a job page's "Cancel job" and its dialog's "Cancel job": a click by that name found two,
 * Playwright's strict mode), and the page behind the dialog takes no input.
 */
export async function answerDialog(dialog: Locator, button: string | RegExp): Promise<void> {
  await dialog.getByRole('button', { name: button, exact: true }).click();
  await dialog.page().locator('dialog[open]').waitFor({ state: 'detached' });
}

/**
 * Pauses the page's clock (installed by the test) a moment ahead of its time and returns that
 * time. The moment was 100 ms: on a loaded machine more passed between reading the page's time
 * and pausing it, and pauseAt refused ("Cannot fast-forward to the past"; bulk-long, load 25),
 * so it is tried again 200 and 400 ms ahead.
 */
export async function pauseSoon(page: Page): Promise<number> {
  for (const aheadMs of [100, 200, 400]) {
    const atMs = Number(await page.evaluate('Date.now()')) + aheadMs;
    try {
      await page.clock.pauseAt(atMs);
      return atMs;
    } catch (error) {
      if (aheadMs === 400 || !String(error).includes('fast-forward to the past')) throw error;
    }
  }
  throw new Error('unreachable');
}

/** Records the page's console errors and uncaught exceptions into `problems`. */
export function watch(page: Page, problems: string[]): Page {
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    // "Failed to load resource: … 404" names no resource; its location does (which read failed).
    const at = message.location().url;
    problems.push(`console: ${message.text()}${at === '' ? '' : ` (${at})`}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  return page;
}

/**
 * Screenshots into tests/artifacts/admin/ (PNG), for a person to look at; no test compares them.
 * `shot`: every page of the UI at desktop and phone size (the tour in tests/admin/browser.test.ts,
 * and the Workers, Schedules, schedule, flow, batch and queue settings pages in the files about
 * them) and the states a feature's test reaches (a dialog, a notice, a progress line): taken only
 * with SEPP_SCREENSHOTS=1, when one works on the UI — a full-page capture costs 0.1–0.4 s of CPU
 * in Chromium's processes and 0.1–1 s of wall on a loaded machine, and a run took ~40 page
 * pictures besides ~75 states (2026-12-06). `fullPage: false` takes the screen as the viewport
 * shows it. `failureShot`: what a failing check found, taken always.
 */
export async function shot(page: Page, name: string, options: { fullPage?: boolean } = {}): Promise<void> {
  if (screenshotsWanted()) await failureShot(page, name, options);
}

/** A picture taken always: what a check that is about to fail found (phone-buttons' clipped buttons). */
export async function failureShot(
  page: Page,
  name: string,
  options: { fullPage?: boolean } = {},
): Promise<void> {
  await page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: options.fullPage ?? true });
}

/** SEPP_SCREENSHOTS=1: the browser tests photograph every page and state (`shot`). */
export const screenshotsWanted = (): boolean => process.env.SEPP_SCREENSHOTS === '1';

/** How far the page scrolls sideways (0 when it fits). A string, not a function: tests are type-checked without the DOM library. */
export async function sidewaysOverflow(page: Page): Promise<number> {
  return Number(
    await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth'),
  );
}

/** A user of the admin UI, as a test logs in with it. */
export interface UiUser {
  readonly name: string;
  readonly password: string;
  readonly role: 'viewer' | 'operator' | 'admin';
}

export interface UiServer {
  readonly t: TestServer;
  /** `http://127.0.0.1:PORT` of the admin UI. */
  readonly adminUrl: string;
  readonly context: BrowserContext;
  /** Closes the browser, stops the server and removes the profile. */
  dispose(): Promise<void>;
}

/**
 * A real server with `user` configured and the UI built from source served
 * from disk, and a headless Chromium with a profile of its own: what every
 * browser test starts from. `toml` is added to the config file; `clock` is the
 * server's (a FakeClock: time moves only when the test says); `betweenBulkSlices`
 * holds bulk operations where a test wants them.
 */
export async function startUiServer(
  user: UiUser,
  toml = '',
  options: Pick<TestServerOptions, 'clock' | 'betweenBulkSlices'> = {},
): Promise<UiServer> {
  buildUi();
  registerSecret('admin password', user.password);
  const dir = mkdtempSync(join(tmpdir(), 'sepp-ui-'));
  const passwordHash = await hashPassword(user.password, testScrypt);
  const t = await startTestServer({
    toml: `[[admin.users]]\nname = "${user.name}"\nrole = "${user.role}"\npassword_hash = "${passwordHash}"\n${toml}`,
    uiAssets: diskAssetSource(join(root, 'ui/dist')),
    ...options,
  });
  const context = await launchBrowser(join(dir, 'chromium-profile'));
  return {
    t,
    adminUrl: `http://127.0.0.1:${t.server.adminPort}`,
    context,
    async dispose() {
      await context.close();
      await t.dispose();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Opens `url` (any page of the UI shows the login form until one logs in),
 * logs in as `user`, waits for the form to go, and registers the session
 * cookie for the run's secret check.
 */
export async function logIn(page: Page, url: string, user: Pick<UiUser, 'name' | 'password'>): Promise<void> {
  await page.goto(url);
  await page.getByLabel('User name').fill(user.name);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByLabel('Password').waitFor({ state: 'detached' });
  for (const cookie of await page.context().cookies()) registerSecret('session cookie', cookie.value);
}
