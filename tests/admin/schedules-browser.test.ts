/**
 * The Schedules page in a real headless Chromium (Debian's chromium-headless-shell via
 * playwright-core) against a real server: an operator sees each schedule's next
 * run and last outcome, pauses, resumes and triggers one, opens a schedule's
 * page; the server audits each action. Photographed at desktop and phone sizes
 * into tests/artifacts/admin/ (schedules-*.png).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  desktop,
  logIn,
  phone,
  screenshotsWanted,
  shot,
  startUiServer,
  type UiServer,
  watch,
} from '../helpers/browser.ts';

const user = { name: 'dana', password: 'schedules-browser-password', role: 'operator' } as const;

const schedulesToml = `
[[schedules]]
name = "heartbeat"
cron = "* * * * * *"
queue = "pings"
type = "ping"

[[schedules]]
name = "nightly-report"
cron = "30 2 * * *"
timezone = "Europe/Berlin"
queue = "reports"
type = "nightly"
payload = '{"kind": "daily", "recipients": ["finance@example.com"]}'
content_type = "application/json"
overlap = "skip"
misfire = "catch_up"
catch_up_max = 3

[[schedules]]
name = "sync"
interval_ms = "15m"
queue = "sync"
type = "pull"
jitter_ms = "30s"
`;

let ui: UiServer;
const problems: string[] = [];

before(async () => {
  ui = await startUiServer(user, schedulesToml);
});
after(() => ui?.dispose());

test('an operator sees the schedules, pauses, resumes and triggers one, and opens its page', async () => {
  const page = watch(ui.context.pages()[0] ?? (await ui.context.newPage()), problems);
  await logIn(page, `${ui.adminUrl}/schedules`, user);
  await page.getByRole('heading', { name: 'Schedules' }).waitFor();

  const row = (name: string) => page.getByRole('row').filter({ has: page.getByRole('link', { name }) });
  // The heartbeat ticks every second: its last run shows up within the page's refresh.
  await row('heartbeat').getByText('enqueued').waitFor({ timeout: 15_000 });
  await row('nightly-report').getByText('30 2 * * *').waitFor();
  await row('nightly-report').getByText('Europe/Berlin').waitFor();
  await row('sync').getByText('every 15 min').waitFor();
  await row('nightly-report').getByText('never').waitFor();
  assert.match((await row('nightly-report').textContent()) ?? '', /in \d+ (h|min)/, 'the next run is shown');
  if (screenshotsWanted()) {
    await shot(page, 'schedules-desktop');
    await page.setViewportSize(phone);
    await shot(page, 'schedules-phone');
    await page.setViewportSize(desktop);
  }

  await page.getByRole('button', { name: 'Pause schedule sync' }).click();
  await page.getByText('Schedule sync paused.').waitFor();
  await row('sync').getByText('paused', { exact: true }).waitFor();
  await page.getByRole('button', { name: 'Resume schedule sync' }).click();
  await row('sync').getByText('active', { exact: true }).waitFor();
  await page.getByRole('button', { name: 'Trigger schedule nightly-report now' }).click();
  await page.getByText(/Enqueued job .* from nightly-report\./).waitFor();
  await row('nightly-report').getByText('triggered').waitFor();

  await page.getByRole('link', { name: 'nightly-report' }).click();
  await page.getByRole('heading', { name: 'Schedule nightly-report' }).waitFor();
  await page.getByRole('heading', { name: 'Next runs' }).waitFor();
  assert.equal(await page.locator('.plain-list li').count(), 10);
  await page.getByText('"finance@example.com"').waitFor();
  await page.getByText('catch up (up to 3)').waitFor();
  if (screenshotsWanted()) {
    await shot(page, 'schedule-detail-desktop');
    await page.setViewportSize(phone);
    await shot(page, 'schedule-detail-phone');
  }

  const audit = (await ui.t.server.engine.listAudit({ actor: user.name })).items
    .filter((e) => e.action.startsWith('schedule.'))
    .map((e) => `${e.action} ${e.target}`)
    .reverse();
  assert.deepEqual(audit, [
    'schedule.pause schedule:sync',
    'schedule.resume schedule:sync',
    'schedule.trigger schedule:nightly-report',
  ]);
  assert.deepEqual(problems, []);
});
