/**
 * The queue settings page in a real headless Chromium (Debian's
 * chromium-headless-shell via playwright-core) against a real server: each value
 * says what it does where the number does not — a 0 that means "no limit" or
 * "not kept", a rate limit's burst that is derived from the rate (not a
 * built-in default), durations in human units beside the exact milliseconds;
 * and the notice a save raises stays on its page, not on the next one.
 * Photographed into tests/artifacts/admin/ (queue-settings-meaning-desktop.png; the phone size
 * with SEPP_SCREENSHOTS=1).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  desktop,
  logIn,
  phone,
  shot,
  sidewaysOverflow,
  startUiServer,
  type UiServer,
  visit,
  watch,
} from '../helpers/browser.ts';

const user = { name: 'rita', password: 'queue-settings-browser-password', role: 'admin' } as const;

let ui: UiServer;
const problems: string[] = [];

before(async () => {
  // A rate and no burst: the burst is the rate's leases.
  ui = await startUiServer(user, '[queues.limited]\nrate_limit_leases = 10\ndedup_window_ms = 90000\n');
});
after(() => ui?.dispose());

test('the settings page says what each value does: no limit, not kept, derived from the rate, durations in human units', async () => {
  const page = watch(ui.context.pages()[0] ?? (await ui.context.newPage()), problems);
  await logIn(page, `${ui.adminUrl}/queues/limited/settings`, user);
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
  const page = watch(ui.context.pages()[0] ?? (await ui.context.newPage()), problems);
  await page.setViewportSize(desktop);
  await visit(page, `${ui.adminUrl}/queues/limited/settings`);
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
  assert.equal(
    (await ui.t.server.engine.listQueues()).find((q) => q.name === 'limited')?.settings.maxAttempts,
    6,
  );
  assert.deepEqual(problems, []);
});
