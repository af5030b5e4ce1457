/**
 * The queue settings page in a real headless Chromium (Debian's
 * /usr/bin/chromium via playwright-core) against a real server: each value
 * says what it does where the number does not — a 0 that means "no limit" or
 * "not kept", a rate limit's burst that is derived from the rate (not a
 * built-in default), durations in human units beside the exact milliseconds;
 * and the notice a save raises stays on its page, not on the next one.
 * Photographed into tests/artifacts/admin/ (queue-settings-meaning-*.png).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { hashPassword } from '../../src/admin/password.ts';
import { diskAssetSource } from '../../src/admin/static-assets.ts';
import { testScrypt } from '../helpers/admin.ts';
import {
  buildUi,
  desktop,
  launchBrowser,
  phone,
  root,
  shot,
  sidewaysOverflow,
  watch,
} from '../helpers/browser.ts';
import { registerSecret } from '../helpers/secret-log.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const user = { name: 'rita', password: 'queue-settings-browser-password' };
registerSecret('admin password', user.password);

let dir: string;
let t: TestServer;
let adminUrl: string;
let context: BrowserContext;
const problems: string[] = [];

before(async () => {
  buildUi();
  dir = mkdtempSync(join(tmpdir(), 'sepp-queue-settings-browser-'));
  const passwordHash = await hashPassword(user.password, testScrypt);
  t = await startTestServer({
    toml:
      `[[admin.users]]\nname = "${user.name}"\nrole = "admin"\npassword_hash = "${passwordHash}"\n` +
      // A rate and no burst: the burst is the rate's leases.
      '[queues.limited]\nrate_limit_leases = 10\ndedup_window_ms = 90000\n',
    uiAssets: diskAssetSource(join(root, 'ui/dist')),
  });
  adminUrl = `http://127.0.0.1:${t.server.adminPort}`;
  context = await launchBrowser(join(dir, 'chromium-profile'));
});

after(async () => {
  await context?.close();
  await t?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function logIn(page: Page, path: string): Promise<void> {
  await page.goto(`${adminUrl}${path}`);
  await page.getByLabel('User name').fill(user.name);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Log in' }).click();
  for (const cookie of await context.cookies()) registerSecret('session cookie', cookie.value);
}

test('the settings page says what each value does: no limit, not kept, derived from the rate, durations in human units', async () => {
  const page = watch(context.pages()[0] ?? (await context.newPage()), problems);
  await logIn(page, '/queues/limited/settings');
  await page.getByRole('heading', { name: 'Settings of limited' }).waitFor();
  const row = (key: string) => page.getByRole('row').filter({ has: page.getByLabel(key, { exact: true }) });
  const text = async (key: string) => ((await row(key).textContent()) ?? '').replace(/\s+/g, ' ');

  await row('rate_limit_burst').getByText('derived from rate_limit_leases').waitFor();
  const burst = await text('rate_limit_burst');
  assert.match(burst, /= rate_limit_leases \(derived\)/);
  assert.match(burst, /\(0 from built-in default\)/);
  assert.equal(await page.getByLabel('rate_limit_burst', { exact: true }).inputValue(), '10');
  assert.match(await text('max_depth'), /no limit/);
  assert.match(await text('completed_retention_ms'), /not kept: deleted on ack/);
  assert.match(await text('allowed_types'), /any type/);
  assert.match(await text('group_rate_limit_burst'), /unused: no rate limit/);
  assert.match(await text('default_lease_ms'), /30 s = 30,000 ms/);
  assert.match(await text('dedup_window_ms'), /1 min 30 s = 90,000 ms/);
  assert.match(await text('dead_retention_ms'), /14 d = 1,209,600,000 ms/);
  // A value that says what it is gets no note.
  assert.equal(await row('max_attempts').locator('.setting-note').count(), 0);
  assert.equal(await row('max_payload_bytes').locator('.setting-note').count(), 0);
  await shot(page, 'queue-settings-meaning-desktop');
  await page.setViewportSize(phone);
  assert.equal(await sidewaysOverflow(page), 0, 'the settings page fits a phone');
  await shot(page, 'queue-settings-meaning-phone');
  assert.deepEqual(problems, []);
});

test('the notice of a save belongs to its page: going to another page clears it', async () => {
  const page = watch(context.pages()[0] ?? (await context.newPage()), problems);
  await page.setViewportSize(desktop);
  await page.goto(`${adminUrl}/queues/limited/settings`);
  await page.getByLabel('max_attempts', { exact: true }).fill('6');
  await page.getByRole('button', { name: 'Save changes' }).click();
  const notice = page.getByRole('status').getByText('Saved max_attempts on limited.');
  await notice.waitFor();

  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Jobs' }).click();
  await page.getByRole('heading', { name: 'Jobs', exact: true }).waitFor();
  // Checked at once: the notice would otherwise stay for its 4 s.
  assert.equal(await notice.count(), 0, "the settings page's notice is not shown on the jobs page");
  await page.goBack();
  await page.getByRole('heading', { name: 'Settings of limited' }).waitFor();
  assert.equal(await notice.count(), 0, 'nor back on its page');
  assert.equal(t.server.engine.listQueues().find((q) => q.name === 'limited')?.settings.maxAttempts, 6);
  assert.deepEqual(problems, []);
});
