/**
 * Issue 36's UI bugs, in Debian's headless Chromium (playwright-core, never a
 * downloaded browser) against a real server on port 0: each test below fails
 * on the UI before its fix. Desktop (1440 px, the issue's width) and phone,
 * light and dark; screenshots (SEPP_SCREENSHOTS=1) in tests/artifacts/admin/round3-*.png.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import type { Overview } from '../../src/admin/api-types.ts';
import { auditActions } from '../../src/admin/audit-actions.ts';
import type { Engine } from '../../src/engine/engine.ts';
import { enc } from '../helpers/admin.ts';
import {
  answerDialog,
  logIn,
  phone,
  shot,
  startUiServer,
  type UiServer,
  visit,
  watch,
} from '../helpers/browser.ts';
import { call } from '../helpers/server.ts';

const user = { name: 'round3', password: 'round-three-browser-password', role: 'admin' } as const;
const wide = { width: 1440, height: 900 };

let ui: UiServer;
let engine: Engine;
let page: Page;
const problems: string[] = [];
const url = (path: string) => `${ui.adminUrl}${path}`;

before(async () => {
  ui = await startUiServer(user, '[queues.stuck]\ndefault_lease_ms = "2s"\n');
  engine = ui.t.server.engine;
  // The pages' timers run on Playwright's clock, which flows as real time does unless a test moves it.
  await ui.context.clock.install();
  page = watch(ui.context.pages()[0] ?? (await ui.context.newPage()), problems);
  await page.setViewportSize(wide);
  await logIn(page, url('/'), user);
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
});
after(() => ui?.dispose());

async function deadLetters(queue: string, n: number, error: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    ids.push((await engine.enqueue({ queue, type: 'send', payload: enc(`{"n":${i}}`) })).jobId);
  }
  for (const id of ids) {
    const [job] = await engine.reserve({ queues: [queue], maxJobs: 1 });
    assert.equal(job?.id, id);
    await engine.nack({ jobId: id, attempt: 1, error, directive: { kind: 'dead_letter' } });
  }
  return ids;
}

/** WCAG's contrast ratio of two `rgb(…)` colours. */
function contrast(a: string, b: string): number {
  const luminance = (css: string) => {
    const [r, g, bl] = (css.match(/[\d.]+/g) ?? []).slice(0, 3).map((v) => {
      const c = Number(v) / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * (r ?? 0) + 0.7152 * (g ?? 0) + 0.0722 * (bl ?? 0);
  };
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return ((hi ?? 0) + 0.05) / ((lo ?? 0) + 0.05);
}

test('"Run all now" names the count and is disabled while it runs', async () => {
  for (let i = 0; i < 3; i++) {
    await engine.enqueue({ queue: 'later', type: 'digest', payload: enc('{}'), delayMs: 3_600_000 });
  }
  await visit(page, url('/jobs?queue=later&state=scheduled'));
  const runAll = page.getByRole('button', { name: 'Run all now' });
  await runAll.click();
  const dialog = page.getByRole('dialog');
  await dialog.getByRole('heading', { name: 'Run 3 scheduled jobs in later now?' }).waitFor();
  // Hold the change at the server's door: while it runs, neither button can start another.
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  await page.route('**/api/v1/bulk/update', async (route) => {
    await held;
    await route.continue();
  });
  await dialog.getByRole('button', { name: 'Run 3 jobs now' }).click();
  await dialog.getByRole('button', { name: 'Working…' }).waitFor();
  assert.equal(await runAll.isDisabled(), true, 'Run all now is disabled while it runs');
  await shot(page, 'round3-run-all-busy-desktop');
  release();
  await page.getByText('3 scheduled jobs in later run now.').waitFor();
  await page.unroute('**/api/v1/bulk/update');
  assert.equal((await engine.listQueues()).find((q) => q.name === 'later')?.counts.ready, 3);
});

test('dark mode: white on a primary button reads at 4.5:1 or more, light mode too', async () => {
  for (const scheme of ['dark', 'light'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await visit(page, url('/jobs'));
    const apply = page.getByRole('button', { name: 'Apply' });
    await apply.waitFor();
    const [color, background] = (await page.evaluate(
      "(() => { const s = getComputedStyle(document.querySelector('.filters .btn-primary')); return [s.color, s.backgroundColor]; })()",
    )) as [string, string];
    const ratio = contrast(color, background);
    assert.ok(ratio >= 4.5, `${scheme}: ${color} on ${background} is ${ratio.toFixed(2)}:1`);
    await shot(page, `round3-jobs-${scheme}-desktop`);
  }
});

test('queue settings: a refused value is shown at its field, the field marked and focused, no quotes advice', async () => {
  await engine.enqueue({ queue: 'emails', type: 'welcome', payload: enc('{}') });
  await page.setViewportSize({ width: 1440, height: 600 });
  await visit(page, url('/queues/emails/settings'));
  const input = page.getByLabel('max_attempts', { exact: true });
  await input.fill('abc');
  await page.getByRole('button', { name: 'Save changes' }).click();
  const problem = page.locator('#problem-max_attempts');
  await problem.waitFor();
  const text = (await problem.textContent()) ?? '';
  assert.match(text, /max_attempts: "abc" is not a whole number; set a number between 1 and/);
  assert.doesNotMatch(text, /without quotes/);
  assert.equal(await input.getAttribute('aria-invalid'), 'true');
  assert.equal(
    await page.evaluate('document.activeElement?.id'),
    'setting-max_attempts',
    'the field has the focus',
  );
  assert.equal(await problem.isVisible(), true);
  const box = await problem.boundingBox();
  assert.ok(
    box !== null && box.y >= 0 && box.y + box.height <= 600,
    `the message is in view: ${JSON.stringify(box)}`,
  );
  await page.getByText('1 setting was refused (max_attempts)').waitFor();
  await shot(page, 'round3-settings-refused-desktop');
  await page.setViewportSize(wide);
});

test('a live list holds its refresh while rows are selected, instead of dropping them', async () => {
  const ids: string[] = [];
  for (let i = 0; i < 3; i++)
    ids.push((await engine.enqueue({ queue: 'picks', type: 't', payload: enc('{}') })).jobId);
  await visit(page, url('/jobs?queue=picks&state=ready'));
  const box = page.getByLabel(`Select job ${ids[0]}`);
  await box.check();
  await page
    .getByTestId('live-status')
    .filter({ hasText: 'refresh paused while 1 row is selected' })
    .waitFor();
  // The selected job leaves the list on the server; three refresh periods pass on the page's clock.
  await engine.cancel(ids[0]!);
  await page.clock.runFor(15_000);
  assert.equal(await box.isChecked(), true, 'the selected row is still there, still selected');
  await page.getByText('1 selected', { exact: true }).waitFor();
  await shot(page, 'round3-selection-paused-desktop');
  // Clearing the selection lets the list refresh again.
  await box.uncheck();
  await page.clock.runFor(6_000);
  await box.waitFor({ state: 'detached' });
});

test('workers: Last seen fits at 1440 px, and a worker not heard from within its lease is marked', async () => {
  await engine.enqueue({ queue: 'stuck', type: 'render', payload: enc('{}') });
  const { jobs } = await call(ui.t.client, ui.t.client.reserve, {
    queues: ['stuck'],
    maxResponseBytes: 0,
    maxJobs: 1,
    leaseDurationMs: 600_000,
    waitTimeoutMs: 0,
    workerId: 'silent-worker-with-a-long-name-01',
  });
  assert.equal(jobs.length, 1);
  await visit(page, url('/workers'));
  const row = page
    .getByRole('table', { name: 'connected workers' })
    .getByRole('row', { name: /silent-worker/ });
  // stuck's default_lease_ms is 2 s: once 2 s pass without a word, the row is marked.
  await row
    .getByTestId('worker-silent')
    .filter({ hasText: 'not heard from within its lease (2 s)' })
    .waitFor();
  assert.match((await row.getAttribute('class')) ?? '', /row-warning/);
  const wrap = page.locator('.table-wrap').first();
  const [scrollWidth, clientWidth] = (await wrap.evaluate((el) => [
    el.scrollWidth,
    el.clientWidth,
  ])) as number[];
  assert.ok(
    (scrollWidth ?? 0) <= (clientWidth ?? 0),
    `the workers table scrolls by ${scrollWidth! - clientWidth!} px`,
  );
  const lastSeen = row.locator('td[data-label="Last seen"]');
  const cell = await lastSeen.boundingBox();
  const card = await page.locator('section.card').first().boundingBox();
  assert.ok(
    cell !== null && card !== null && cell.x + cell.width <= card.x + card.width,
    'Last seen is inside the card',
  );
  await shot(page, 'round3-workers-silent-desktop');
  await page.emulateMedia({ colorScheme: 'dark' });
  await shot(page, 'round3-workers-silent-dark-desktop');
  await page.emulateMedia({ colorScheme: 'light' });
});

test('audit log: the action filter lists every action the server writes; schedule targets are links', async () => {
  await engine.recordAudit({
    actor: 'round3',
    action: 'schedule.trigger',
    target: 'schedule:nightly',
    details: {},
  });
  await visit(page, url('/audit'));
  await page.getByRole('link', { name: 'schedule:nightly' }).waitFor();
  const options = await page
    .locator('#audit-action option')
    .evaluateAll((all) => all.map((o) => o.textContent ?? '').filter((v) => v !== 'any action'));
  assert.deepEqual(options, [...auditActions] as string[]);
  for (const name of ['job.update', 'jobs.cancel', 'jobs.update', 'schedule.create', 'schedule.trigger']) {
    assert.ok((options as string[]).includes(name), name);
  }
  const link = page.getByRole('link', { name: 'schedule:nightly' });
  assert.equal(await link.getAttribute('href'), '/schedules/nightly');
  await shot(page, 'round3-audit-desktop');
});

test('a cancelled running job: its last attempt is stopped by the cancel, not failed, and no UTC time shows', async () => {
  const { jobId } = await engine.enqueue({ queue: 'stopme', type: 'render', payload: enc('{}') });
  const [lease] = await engine.reserve({ queues: ['stopme'], workerId: 'renderer' });
  assert.equal(lease?.id, jobId);
  await engine.cancel(jobId);
  const at = new Date((await engine.getJob(jobId)).cancelledAtMs ?? 0).toISOString();
  // What the SDK worker nacks with once told to stop: the server's message, with its UTC time.
  await engine.nack({
    jobId,
    attempt: 1,
    error: `job ${jobId} was cancelled at ${at}: stop working on it; it will not be retried`,
  });
  assert.equal((await engine.getJob(jobId)).state, 'cancelled');
  await visit(page, url(`/jobs/${jobId}`));
  await page.getByRole('heading', { name: 'Timeline' }).waitFor();
  const timeline = page.locator('ol.timeline');
  await timeline.getByText(/attempt stopped/).waitFor();
  assert.equal(await timeline.getByText(/attempt failed/).count(), 0, 'no failed attempt');
  await page.getByText('stopped by the cancel', { exact: true }).waitFor();
  const shown = (await page.locator('main').textContent()) ?? '';
  assert.doesNotMatch(shown, /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/, 'no ISO UTC time on the page');
  await shot(page, 'round3-job-cancelled-running-desktop');
});

test('lists at 1440 px: the error column keeps the room, times stay narrow, Order is one column', async () => {
  const long =
    'SMTP 550 5.1.1 <someone@example.com>: Recipient address rejected: User unknown in virtual mailbox table';
  await deadLetters('bounces', 2, long);
  await visit(page, url('/jobs?state=dead'));
  const error = page.locator('td.error-cell').first();
  await error.waitFor();
  const errorBox = await error.boundingBox();
  assert.ok(errorBox !== null && errorBox.width >= 300, `the error column is ${errorBox?.width} px wide`);
  for (const box of await page
    .locator('td[data-label="Failed"]')
    .evaluateAll((cells) => cells.map((c) => c.getBoundingClientRect().width))) {
    assert.ok(box <= 220, `a time column is ${box} px wide`);
  }
  const order = await page.locator('#jobs-order').boundingBox();
  assert.ok(order !== null && order.width <= 320, `the Order select is ${order?.width} px wide`);
  await shot(page, 'round3-jobs-dead-desktop');
});

test('notices stay clear of the page header buttons; Requeue all with a reason names the count, no doubled words', async () => {
  const ids = await deadLetters('dl', 3, 'bad input');
  await visit(page, url('/dead-letters?queue=dl&reason=dead_lettered'));
  await page.getByRole('button', { name: 'Requeue all 3…' }).click();
  const heading = page.getByRole('dialog').getByRole('heading');
  await heading
    .filter({ hasText: 'Requeue all 3 dead letters of dl with reason “dead lettered”?' })
    .waitFor();
  assert.doesNotMatch((await heading.textContent()) ?? '', /dead lettered dead letters/);
  await page.getByRole('dialog').getByRole('button', { name: 'Requeue 3', exact: true }).waitFor();
  await shot(page, 'round3-requeue-all-reason-desktop');
  await answerDialog(page.getByRole('dialog'), 'Cancel');
  for (const [i, size] of [wide, phone].entries()) {
    await page.setViewportSize(size);
    await visit(page, url('/dead-letters?queue=dl'));
    await page.getByRole('button', { name: `Requeue job ${ids[i]}` }).click();
    await answerDialog(page.getByRole('dialog'), 'Requeue 1 dead letter');
    const notice = page.locator('.notice').first();
    await notice.waitFor();
    const n = await notice.boundingBox();
    assert.ok(n !== null);
    for (const button of await page.locator('.page-actions button').all()) {
      const b = await button.boundingBox();
      if (b === null) continue;
      const overlap: boolean =
        n.x < b.x + b.width && b.x < n.x + n.width && n.y < b.y + b.height && b.y < n.y + n.height;
      assert.equal(overlap, false, `at ${size.width} px the notice covers ${await button.textContent()}`);
    }
    await shot(page, `round3-notice-${size === wide ? 'desktop' : 'phone'}`);
  }
  await page.setViewportSize(wide);
});

test('the "Already enqueued with this key" banner goes when the next submit is blocked', async () => {
  await visit(page, url('/enqueue?queue=emails'));
  await page.getByLabel('Job type').fill('welcome');
  await page.locator('#enq-key').fill('round3-key');
  await page.getByRole('button', { name: 'Enqueue', exact: true }).click();
  await page.getByText('Enqueued job').waitFor();
  await page.getByRole('button', { name: 'Enqueue', exact: true }).click();
  const banner = page.getByText('Already enqueued with this key');
  await banner.waitFor();
  await page.getByLabel('Job type').fill('');
  await page.getByRole('button', { name: 'Enqueue', exact: true }).click();
  await banner.waitFor({ state: 'detached' });
});

test('phone: filters folded, totals before server facts, navigation in at most two rows', async () => {
  const small = watch(await ui.context.newPage(), problems);
  await small.setViewportSize(phone);
  for (const scheme of ['light', 'dark'] as const) {
    await small.emulateMedia({ colorScheme: scheme });
    await visit(small, url('/'));
    const totals = await small.locator('section.totals').boundingBox();
    const server = await small.getByRole('heading', { name: 'Server' }).boundingBox();
    assert.ok(totals !== null && server !== null && totals.y < server.y, 'totals come first');
    const tops = await small
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link')
      .evaluateAll((links) => [...new Set(links.map((l) => Math.round(l.getBoundingClientRect().top)))]);
    assert.ok(tops.length <= 2, `the navigation takes ${tops.length} rows`);
    await shot(small, `round3-dashboard-${scheme}-phone`);

    await visit(small, url('/jobs?state=dead'));
    await small.getByText('Filters').first().waitFor();
    assert.equal(await small.locator('#jobs-queue').isVisible(), false, 'the filters start folded');
    const list = await small.locator('.list-summary').boundingBox();
    assert.ok(
      list !== null && list.y < phone.height,
      `the list starts at ${list?.y} px, on the first screen`,
    );
    await shot(small, `round3-jobs-${scheme}-phone`);
    await small.getByText('Filters').first().click();
    await small.locator('#jobs-queue').waitFor();
    await shot(small, `round3-jobs-filters-open-${scheme}-phone`);
  }
  await small.close();
  assert.deepEqual(
    problems.filter((p) => !/400 \(Bad Request\)/.test(p)),
    [],
  );
});

test('the store unavailable: the dashboard shows a banner with since when and why, not an error page', async () => {
  // The overview as a server answers it while PostgreSQL is down (tests/store/postgres-serve.test.ts
  // reads the real one): the store-derived parts null, the store's health unavailable.
  const sinceMs = Date.UTC(2026, 11, 7, 8, 0, 0);
  const lastError =
    'storage unavailable, nothing was written: PostgreSQL: connect ECONNREFUSED 127.0.0.1:5432';
  await page.route('**/api/v1/overview*', async (route) => {
    const real = (await (await route.fetch()).json()) as Overview;
    const down: Overview = {
      ...real,
      storeHealth: { available: false, unavailableSinceMs: sinceMs, lastError, failures: 12 },
      totals: null,
      queueCount: null,
      queues: null,
      nextPageToken: null,
    };
    await route.fulfill({ json: down });
  });
  try {
    await visit(page, url('/'));
    const banner = page.getByTestId('store-unavailable');
    await banner.waitFor();
    assert.match(
      (await banner.textContent()) ?? '',
      /^The store is unavailable since 2026-12-07 \d\d:\d\d:00 [^:]+: storage unavailable, nothing was written: PostgreSQL: connect ECONNREFUSED 127\.0\.0\.1:5432\. Counts and queues show again once it answers\.$/,
    );
    assert.equal(await page.getByTestId('total-ready').textContent(), '—');
    await page.getByText('Queues unknown').waitFor();
    await page.getByRole('heading', { name: 'Server' }).waitFor();
    await shot(page, 'round3-dashboard-store-unavailable-desktop');
  } finally {
    await page.unroute('**/api/v1/overview*');
  }
  await page.getByTestId('store-unavailable').waitFor({ state: 'detached' });
});
