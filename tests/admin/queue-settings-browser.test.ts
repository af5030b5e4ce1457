/**
 * The queue settings page in a real headless Chromium (Debian's
 * chromium-headless-shell via playwright-core) against a real server: each value
 * says what it does where the number does not — a 0 that means "no limit" or
 * "not kept", a rate limit's burst that is derived from the rate (not a
 * built-in default), durations in human units beside the exact milliseconds;
 * and the notice a save raises stays on its page, not on the next one. A
 * form (settings, the jobs and audit filters) starts from new data in the
 * draw that brings it, not a frame later.
 * Photographed into tests/artifacts/admin/ (queue-settings-meaning-desktop.png; the phone size
 * with SEPP_SCREENSHOTS=1).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  desktop,
  followLink,
  logIn,
  pauseSoon,
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
  // The pages' timers run on Playwright's clock, which flows as real time does unless a test stops it.
  await ui.context.clock.install();
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

test('a form starts from new data in the draw that brings it: the jobs and audit filters, the settings', async () => {
  const page = watch(ui.context.pages()[0] ?? (await ui.context.newPage()), problems);
  await page.setViewportSize(desktop);
  const at = (path: string) => `${ui.adminUrl}${path}`;
  // The forms took new data in an effect, which Preact runs after the next frame (rAF or a 35 ms
  // timer): for that frame a field showed the old value, and a key typed then was lost. The
  // page's clock stands still below, so a field left to catch up in an effect would stay old.
  // Filters of a queue that is gone: the list is not read, so no new answer draws the page again
  // (a new list's read starting over did, in a layout effect, and took the fields along).
  // The queue list answers after the jobs list here (as it may on a busy machine): the page does not
  // count a queue's jobs before the list says the queue exists (a count of a queue that is gone is a 404).
  const queueList = '**/api/v1/queues';
  await page.route(queueList, async (route) => {
    await new Promise((later) => setTimeout(later, 500));
    await route.continue();
  });
  await visit(page, at('/jobs?queue=gone&type=alpha'));
  await page.getByRole('option', { name: 'gone (no such queue)' }).waitFor({ state: 'attached' });
  await page.unroute(queueList);
  const typeField = page.getByLabel('Type starts with');
  assert.equal(await typeField.inputValue(), 'alpha');
  await pauseSoon(page);
  // Another address on the same page (a link, the back button): the filters show it at once.
  await followLink(page, at('/jobs?queue=gone&type=beta&group=acme'));
  assert.deepEqual(
    [await typeField.inputValue(), await page.getByLabel('Group', { exact: true }).inputValue()],
    ['beta', 'acme'],
    'the job filters show the new address',
  );
  await shot(page, 'jobs-filters-new-address-desktop');
  await followLink(page, at('/audit?actor=alpha'));
  const actorField = page.getByLabel('User');
  assert.equal(await actorField.inputValue(), 'alpha');
  await followLink(page, at('/audit?actor=beta&target=queue%3Alimited'));
  assert.deepEqual(
    [await actorField.inputValue(), await page.getByLabel('Target').inputValue()],
    ['beta', 'queue:limited'],
    'the audit filters show the new address',
  );
  await page.clock.resume();

  // A reset saved: the fresh copy of the queue that follows has no override, and its field is
  // editable again in the draw that shows it (it stayed disabled, ticked for reset, a frame more).
  await visit(page, at('/queues/limited/settings'));
  const field = page.getByLabel('max_attempts', { exact: true });
  await field.fill('7');
  await page.getByRole('button', { name: 'Save changes' }).click();
  const reset = page.getByRole('checkbox', { name: /reset max_attempts to/ });
  await reset.waitFor();
  await reset.check();
  assert.equal(await field.isDisabled(), true, 'a setting ticked for reset is not edited');
  await pauseSoon(page);
  await page.getByRole('button', { name: 'Save changes' }).click();
  await reset.waitFor({ state: 'detached' });
  assert.equal(await field.isDisabled(), false, 'the field is editable once the reset is saved');
  assert.equal(await field.inputValue(), '5');
  await shot(page, 'queue-settings-reset-saved-desktop');
  await page.clock.resume();
  assert.equal(
    (await ui.t.server.engine.listQueues()).find((q) => q.name === 'limited')?.settings.maxAttempts,
    5,
  );
  assert.deepEqual(problems, [], `the page's console: ${problems.join('; ')}`);
});
