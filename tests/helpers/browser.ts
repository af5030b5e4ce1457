/**
 * Headless Chromium for the admin UI's tests: Debian's /usr/bin/chromium
 * driven by playwright-core (never a downloaded browser), the UI built from
 * source if stale, screenshots into tests/artifacts/admin/, and console errors
 * collected so a test can assert there were none.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';

export const root = new URL('../..', import.meta.url).pathname;
export const chromiumPath = '/usr/bin/chromium';
export const artifacts = join(root, 'tests/artifacts/admin');
export const desktop = { width: 1280, height: 800 };
export const phone = { width: 375, height: 740 };

/** Builds ui/dist when its sources changed (the test serves it from disk). */
export function buildUi(): void {
  const built = spawnSync(process.execPath, [join(root, 'scripts/build-ui.mjs'), '--if-stale'], {
    encoding: 'utf8',
  });
  assert.equal(built.status, 0, `building the UI failed:\n${built.stdout}${built.stderr}`);
}

export async function launchBrowser(profileDir: string): Promise<BrowserContext> {
  if (!existsSync(chromiumPath)) {
    throw new Error(
      `${chromiumPath} is missing: install Debian's chromium (apt-get install -y chromium; .ci/run does it). This test never downloads a browser.`,
    );
  }
  mkdirSync(artifacts, { recursive: true });
  return chromium.launchPersistentContext(profileDir, {
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
    viewport: desktop,
  });
}

/** Records the page's console errors and uncaught exceptions into `problems`. */
export function watch(page: Page, problems: string[]): Page {
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  return page;
}

export async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });
}

/** How far the page scrolls sideways (0 when it fits). A string, not a function: tests are type-checked without the DOM library. */
export async function sidewaysOverflow(page: Page): Promise<number> {
  return Number(
    await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth'),
  );
}
