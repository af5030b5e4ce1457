/**
 * A schedule that has just run reads "now", never "in 29 s" (issue 36: just-
 * happened events shown in the future), in Debian's headless Chromium. The
 * server's engine clock is 30 s ahead of the browser's while its HTTP Date
 * header is the machine's: the page sees no skew to correct (under 2 s), so
 * the run's time is 30 s ahead of the page's "now" — as with a browser whose
 * clock is behind — on the list and on the schedule's own page.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { FakeClock } from '../../src/engine/clock.ts';
import { desktop, logIn, startUiServer, type UiServer, visit, watch } from '../helpers/browser.ts';

const user = { name: 'scheduletimes', password: 'schedule-times-password', role: 'operator' } as const;
const toml = `[queues.mail]\n\n[[schedules]]\nname = "nightly"\ncron = "30 2 * * *"\nqueue = "mail"\ntype = "report"\n`;

let ui: UiServer;
let page: Page;
const problems: string[] = [];
const url = (path: string) => `${ui.adminUrl}${path}`;

before(async () => {
  ui = await startUiServer(user, toml, { clock: new FakeClock(Date.now() + 30_000) });
  page = watch(ui.context.pages()[0] ?? (await ui.context.newPage()), problems);
  await page.setViewportSize(desktop);
  await logIn(page, url('/'), user);
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
});
after(() => ui?.dispose());

test('a schedule triggered on a server whose clock is ahead: its last run reads "now", not "in …"', async () => {
  await ui.t.server.engine.triggerSchedule('nightly');
  await visit(page, url('/schedules'));
  const row = page.getByRole('row').filter({ hasText: 'nightly' });
  const last = row.getByRole('cell').filter({ hasText: /^triggered /i });
  await last.waitFor();
  assert.equal(((await last.textContent()) ?? '').trim(), 'triggered now');

  await visit(page, url('/schedules/nightly'));
  const term = page.getByText('Last run', { exact: true });
  await term.waitFor();
  const detail = page.locator('dd').filter({ hasText: /^triggered /i });
  await detail.waitFor();
  assert.equal(((await detail.textContent()) ?? '').trim(), 'triggered now');
  assert.deepEqual(problems, []);
});
