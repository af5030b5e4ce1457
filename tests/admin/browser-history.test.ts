/**
 * The dashboard's stored history (issue 36, item 3) and its honest labels, in
 * Debian's headless Chromium against a real server whose clock the test moves
 * (FakeClock): the caption says exactly what the numbers cover, the time before the
 * server started is drawn as no data, the rates say "since …" while the server is
 * younger than their window, and a finished job shows when it started and how long
 * it ran. Desktop and phone, light and dark: tests/artifacts/admin/history-*.png (SEPP_SCREENSHOTS=1).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { FakeClock } from '../../src/engine/clock.ts';
import type { Engine } from '../../src/engine/engine.ts';
import { enc } from '../helpers/admin.ts';
import {
  logIn,
  phone,
  shot,
  sidewaysOverflow,
  startUiServer,
  type UiServer,
  visit,
  watch,
} from '../helpers/browser.ts';

const user = { name: 'history', password: 'history-browser-password', role: 'admin' } as const;
const wide = { width: 1440, height: 900 };
const minute = 60_000;

let ui: UiServer;
let engine: Engine;
let clock: FakeClock;
let startMs = 0;
let page: Page;
let ackedId = '';
const problems: string[] = [];
const url = (path: string) => `${ui.adminUrl}${path}`;

async function run(type: string, waitMs: number, runMs: number, fail = false): Promise<string> {
  const { jobId } = await engine.enqueue({ queue: 'mail', type, payload: enc('{}') });
  clock.advance(waitMs);
  const [job] = await engine.reserve({ queues: ['mail'], maxJobs: 1 });
  assert.equal(job?.id, jobId);
  clock.advance(runMs);
  if (fail) await engine.nack({ jobId, attempt: 1, error: 'smtp down', directive: { kind: 'dead_letter' } });
  else await engine.ack({ jobId, attempt: 1 });
  return jobId;
}

before(async () => {
  // The server's clock starts on a whole minute, a little before the browser's now.
  clock = new FakeClock(Math.floor((Date.now() - 10 * minute) / minute) * minute);
  startMs = clock.nowMs();
  ui = await startUiServer(user, '[queues.mail]\ncompleted_retention_ms = 3600000\n', { clock });
  engine = ui.t.server.engine;
  for (let i = 0; i < 8; i++) ackedId = await run('welcome', 400, 2_000);
  await run('welcome', 400, 9_000, true);
  await run('digest', 5_000, 25_000);
  clock.advance(minute);
  for (let i = 0; i < 3; i++) await run('digest', 1_000, 20_000);
  clock.advance(2 * minute);
  await engine.flushHistory();
  page = watch(ui.context.pages()[0] ?? (await ui.context.newPage()), problems);
  await page.setViewportSize(wide);
  await logIn(page, url('/'), user);
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
});
after(() => ui?.dispose());

test('the history says which window it covers, shows no data before the start, and its figures per type', async () => {
  const cover = page.getByTestId('history-cover');
  await cover.waitFor();
  const text = (await cover.textContent()) ?? '';
  assert.match(text, /60 one-minute buckets/);
  assert.match(text, /no data before \d\d:\d\d/);
  // The minutes before the server started are drawn as no data, not as zeros; the ones it ran are not.
  const ran = (Math.floor(clock.nowMs() / minute) * minute - startMs) / minute;
  assert.ok(ran >= 3 && ran < 10);
  assert.equal(await page.locator('.history-bar[data-no-data]').count(), 60 - ran);
  const table = page.getByRole('table', { name: 'history per queue and type' });
  const welcome = table.getByRole('row').filter({ hasText: 'welcome' });
  const cells = await welcome.getByRole('cell').allTextContents();
  // Completed, failed, dead, failure rate, wait, run.
  assert.deepEqual(cells.slice(0, 4), ['welcome', '8', '1', '1']);
  assert.equal(cells[4], '11 %');
  // p50 and p95 of 2 s and 9 s runs, as the histograms hold them (within 9 %).
  assert.equal(cells[6], '1.9 s / 8.9 s');
  const digest = await table
    .getByRole('row')
    .filter({ hasText: 'digest' })
    .getByRole('cell')
    .allTextContents();
  assert.deepEqual(digest.slice(0, 4), ['digest', '4', '0', '0']);
  // The live rates say how long they really cover: the server is 13 minutes old, not an hour.
  assert.match(
    (await page.getByTestId('rates-cover').textContent()) ?? '',
    /^since \d\d:\d\d, when sepp started/,
  );
  assert.equal(await sidewaysOverflow(page), 0);
  await page.locator('#history-title').scrollIntoViewIfNeeded();
  await shot(page, 'history-dashboard-desktop');
  await page.emulateMedia({ colorScheme: 'dark' });
  await shot(page, 'history-dashboard-dark-desktop');
  await page.emulateMedia({ colorScheme: 'light' });

  await page.getByRole('button', { name: '7 d' }).click();
  await page.waitForURL(/history=7d/);
  await page.getByText(/168 one-hour buckets/).waitFor();
  assert.match((await cover.textContent()) ?? '', /no data before/);
  await page.getByRole('button', { name: '1 h' }).first().click();
  assert.deepEqual(problems, []);
});

test('on a phone the history fits the width', async () => {
  await page.setViewportSize(phone);
  await visit(page, url('/?history=24h'));
  await page.getByText(/24 one-hour buckets/).waitFor();
  assert.equal(await sidewaysOverflow(page), 0);
  await page.locator('#history-title').scrollIntoViewIfNeeded();
  await shot(page, 'history-dashboard-phone');
  await page.emulateMedia({ colorScheme: 'dark' });
  await shot(page, 'history-dashboard-dark-phone');
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize(wide);
  assert.deepEqual(problems, []);
});

test('a finished job shows when it started and how long it ran', async () => {
  await visit(page, url(`/jobs/${ackedId}`));
  await page.getByTestId('job-ran').waitFor();
  assert.equal(await page.getByTestId('job-ran').textContent(), '2 s');
  assert.ok(await page.getByText('Started', { exact: true }).isVisible());
  await shot(page, 'history-job-ran-desktop');
  assert.deepEqual(problems, []);
});

test("the Workers page: each worker's last 15 minutes and the jobs it runs now, for how long", async () => {
  engine.workers.touch({ workerId: 'w-busy', address: '10.0.0.9:4000', queues: ['mail'] });
  await run('welcome', 100, 1_000);
  await engine.enqueue({ queue: 'mail', type: 'report', payload: enc('{}') });
  // run() reserves without a worker id: lease these two for w-busy, one done and one running.
  const [done] = await engine.reserve({ queues: ['mail'], maxJobs: 1, workerId: 'w-busy' });
  await engine.ack({ jobId: done!.id, attempt: done!.attempt });
  await engine.enqueue({ queue: 'mail', type: 'report', payload: enc('{}') });
  const [running] = await engine.reserve({ queues: ['mail'], maxJobs: 1, workerId: 'w-busy' });
  clock.advance(12_000);
  engine.workers.touch({ workerId: 'w-busy', address: '10.0.0.9:4000', queues: ['mail'] });
  await visit(page, url('/workers'));
  const row = page.getByRole('row').filter({ hasText: 'w-busy' });
  await row.getByTestId('worker-recent').waitFor();
  assert.match((await row.getByTestId('worker-recent').textContent()) ?? '', /^1 \/ 0last 15 min/);
  const runningCell = row.getByTestId('worker-running');
  await runningCell.getByRole('link').waitFor();
  assert.equal(await runningCell.getByRole('link').getAttribute('href'), `/jobs/${running!.id}`);
  // How long it has run, against the browser's idea of the server's time (the Date header: real
  // time, while this server's clock is the test's, minutes behind): a duration, not a fixed one.
  assert.match((await runningCell.textContent()) ?? '', /report, \d+ (s|min)/);
  await shot(page, 'history-workers-desktop');
  assert.deepEqual(problems, []);
});

test("a schedule's page lists its last runs with their jobs, and links to its jobs", async () => {
  await engine.putSchedule(
    { name: 'nightly', intervalMs: minute, template: { queue: 'mail', type: 'digest', payload: enc('{}') } },
    'create',
  );
  clock.advance(minute);
  await engine.runMaintenance();
  clock.advance(minute);
  await engine.runMaintenance();
  await visit(page, url('/schedules/nightly'));
  const table = page.getByRole('table', { name: 'last runs' });
  await table.waitFor();
  const runs = await engine.scheduleRuns('nightly');
  assert.ok(runs.length >= 1);
  const links = table.getByRole('link');
  assert.equal(await links.count(), runs.length);
  assert.equal(await links.first().getAttribute('href'), `/jobs/${runs[0]!.jobId}`);
  assert.equal(await page.getByTestId('schedule-jobs').getAttribute('href'), '/jobs?schedule=nightly');
  // A manual trigger's detail ("by alice") is information, drawn like the other cells, not as an error.
  await engine.triggerSchedule('nightly', {
    actor: 'alice',
    action: 'schedule.trigger',
    target: 'schedule:nightly',
  });
  await page.reload();
  const manual = table.getByRole('row').filter({ hasText: 'manual trigger' });
  const colourOf = (cell: typeof manual) =>
    cell.evaluate((el) => el.ownerDocument.defaultView?.getComputedStyle(el).color);
  const detail = manual.getByRole('cell', { name: 'by alice' });
  await detail.waitFor();
  const detailColour = await colourOf(detail);
  assert.match(String(detailColour), /^rgb/);
  assert.equal(detailColour, await colourOf(manual.getByRole('cell', { name: 'triggered', exact: true })));
  await shot(page, 'history-schedule-runs-desktop');
  await page.setViewportSize(phone);
  assert.equal(await sidewaysOverflow(page), 0);
  await shot(page, 'history-schedule-runs-phone');
  await page.setViewportSize(wide);
  // The link leads to exactly the schedule's jobs: not the other digest jobs of mail (before()'s).
  const made = new Set(
    (await engine.scheduleRuns('nightly')).map((r) => r.jobId).filter((id) => id !== null),
  );
  await page.getByTestId('schedule-jobs').click();
  const list = page.getByRole('region', { name: 'jobs in all queues made by schedule nightly' });
  const jobLinks = list.locator('a[href^="/jobs/"]');
  await jobLinks.nth(made.size - 1).waitFor();
  const hrefs = [];
  for (let i = 0; i < (await jobLinks.count()); i++) hrefs.push(await jobLinks.nth(i).getAttribute('href'));
  assert.deepEqual(hrefs.sort(), [...made].map((id) => `/jobs/${id}`).sort());
  await shot(page, 'history-schedule-jobs-desktop');
  // The filter shows, and its × removes it: every job again, the other digests among them.
  await page.getByRole('button', { name: 'Remove the filter: made by schedule nightly' }).click();
  const all = page.getByRole('region', { name: 'jobs in all queues', exact: true });
  await all.locator('a[href^="/jobs/"]').nth(made.size).waitFor();
  assert.equal(new URL(page.url()).search, '');
  assert.deepEqual(problems, []);
});
