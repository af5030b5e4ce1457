/**
 * A long bulk operation in the admin UI (issue 36, item 1), in Debian's
 * headless Chromium against a real server holding 102,000 ready jobs in two
 * queues, all of tenant acme: a filter no index answers (metadata) is counted
 * on at most 100,000 jobs, so the list's total and the confirmation say "at
 * least 100,000" and how far the count looked; "Cancel all matching" then runs
 * as one operation in slices of about 5 ms each, and the page shows its progress —
 * "N of at least 100,000 done…" — from the answer that started it, updated by each
 * poll, with a Stop button that stops it after its current slice. The server holds
 * the operation between two slices once it has changed 20,000 jobs, until the Stop
 * (betweenBulkSlices): on a quiet machine the 102,000 jobs take about a second, so
 * without the hold the Stop, clicked after a poll, came after the end. A Stop that
 * does come after the end (held by page.route until the operation has ended) is
 * told as such: "… (it ran to its end before the Stop took effect)". Desktop light,
 * 375 px phone dark. Screenshots (SEPP_SCREENSHOTS=1): tests/artifacts/admin/bulk-long-*.png.
 *
 * Honest progress (issue 36, item 4): with the progress reads held unanswered
 * (page.route) and the page's clock moved by Playwright, the line says "stale
 * since …" within two poll periods plus a second, no poll starts while one
 * waits, the waiting one is given up after 5 s and the next one starts; once
 * the reads are answered again the progress is live again.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Page, Route } from 'playwright-core';
import type { BulkOperationInfo } from '../../src/engine/control-types.ts';
import type { Engine } from '../../src/engine/engine.ts';
import { enc } from '../helpers/admin.ts';
import {
  answerDialog,
  desktop,
  logIn,
  pauseSoon,
  phone,
  shot,
  sidewaysOverflow,
  startUiServer,
  type UiServer,
  watch,
} from '../helpers/browser.ts';

const user = { name: 'bulkops', password: 'bulk-long-password', role: 'operator' } as const;
const stored = 102_000;
const list = '/jobs?state=ready&meta=tenant%3Dacme';

let ui: UiServer;
let engine: Engine;
let page: Page;
const problems: string[] = [];
const url = (path: string) => `${ui.adminUrl}${path}`;

/**
 * An operation that has changed `holdAtChanged` jobs waits between two slices until a Stop ends
 * the wait (or `release`, as the file ends): it is then running, part way, whatever the machine's
 * speed. A slice changes at most 2,000 jobs, so it waits before 22,000 of the 102,000.
 */
let holdAtChanged = Number.POSITIVE_INFINITY;
let release: () => void = () => undefined;
const held = new Promise<void>((resolve) => {
  release = resolve;
});
const betweenBulkSlices = (op: Readonly<BulkOperationInfo>) =>
  op.changed >= holdAtChanged ? held : Promise.resolve();

before(async () => {
  ui = await startUiServer(user, '[queues.reports]\n\n[queues.exports]\n', { betweenBulkSlices });
  engine = ui.t.server.engine;
  await enqueueMatching(stored);
  page = watch(ui.context.pages()[0] ?? (await ui.context.newPage()), problems);
  await page.setViewportSize(desktop);
  await logIn(page, url('/'), user);
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
});
after(() => {
  release();
  return ui?.dispose();
});

/** Enqueues `count` ready jobs the list's filter matches, half in each queue. */
async function enqueueMatching(count: number): Promise<void> {
  const batch = engine.limits.maxBatchJobs;
  for (let n = 0; n < count; n += batch) {
    await engine.enqueueBatch(
      Array.from({ length: Math.min(batch, count - n) }, (_, i) => ({
        queue: i % 2 === 0 ? 'reports' : 'exports',
        type: 'render',
        payload: enc('{}'),
        metadata: { tenant: 'acme' },
      })),
    );
  }
}

/**
 * Holds the page's reads: the progress line then stays as the operation's first answer drew it,
 * however soon the server ends the operation (on a quiet machine it may end within a second).
 * Every other read is held too: each answer's Date header sets the page's idea of the server's
 * time, which would undo a page clock moved ahead (ui/src/clock.ts). `held` is the progress
 * reads; `release` lets every held read and every later one through.
 */
async function holdProgressReads(): Promise<{ held: Route[]; release: () => Promise<void> }> {
  const held: Route[] = [];
  const others: Route[] = [];
  const reads = '**/api/v1/**';
  await page.route(reads, (route) => {
    if (route.request().method() !== 'GET') void route.continue();
    else if (route.request().url().includes('/api/v1/bulk-operations/')) held.push(route);
    else others.push(route);
  });
  return {
    held,
    release: async () => {
      await page.unroute(reads);
      for (const route of [...held, ...others]) await route.continue().catch(() => undefined);
    },
  };
}

/** The notice of a Stop that reached the server after the operation's last slice had begun. */
const tooLate = '(it ran to its end before the Stop took effect)';

/**
 * Stops the operation if it still runs, and waits for its notice: "(stopped)" when the Stop came
 * first, none when the operation ended before the click, that it ran to its end when it ended
 * before the Stop reached it (each a right answer to a late Stop).
 */
async function stopOrEnded(progress: ReturnType<Page['getByRole']>): Promise<void> {
  if (await progress.isVisible()) {
    await progress
      .getByRole('button', { name: 'Stop' })
      .click({ timeout: 2000 })
      .catch(() => undefined);
  }
  await page
    .getByText(
      /^Cancelled [\d,]+ ready jobs with tenant=acme in all queues( \(stopped\)| \(it ran to .*\))?\.$/,
    )
    .first()
    .waitFor();
  await progress.waitFor({ state: 'detached' });
}

/** Starts "Cancel all matching" from the list; answers the progress line, shown from the start. */
async function startCancel(): Promise<ReturnType<Page['getByRole']>> {
  await page.getByRole('button', { name: 'Cancel all matching' }).click();
  const dialog = page.getByRole('dialog');
  await answerDialog(dialog, /^Cancel .*jobs$/);
  const progress = page.getByRole('status').filter({ hasText: /^Cancel all matching: / });
  // The answer that started it is its progress at once.
  await progress.waitFor();
  return progress;
}

/** Stops the operation; answers the notice's text. */
async function stop(progress: ReturnType<Page['getByRole']>): Promise<string> {
  await progress.getByRole('button', { name: 'Stop' }).click();
  const notice = page.getByText(/^Cancelled [\d,]+ ready jobs with tenant=acme in all queues \(stopped\)\.$/);
  await notice.first().waitFor();
  await progress.waitFor({ state: 'detached' });
  return (await notice.first().textContent()) ?? '';
}

test('"at least N" when the count stopped; the long operation’s progress line, then Stop', async () => {
  await page.goto(url(list));
  await page
    .getByText(
      'at least 100,000 jobs (the count stopped after 100,000 jobs): ready jobs in all queues with tenant=acme',
    )
    .waitFor();
  await shot(page, 'bulk-long-at-least-desktop');
  await page.getByRole('button', { name: 'Cancel all matching' }).click();
  const dialog = page.getByRole('dialog');
  await dialog
    .getByRole('heading', { name: 'Cancel at least 100,000 ready jobs with tenant=acme in all queues?' })
    .waitFor();
  await dialog
    .getByText('at least 100,000 jobs (the count stopped after 100,000 jobs) match.', { exact: false })
    .waitFor();
  await dialog.getByRole('button', { name: 'Cancel at least 100,000 jobs' }).waitFor();
  await shot(page, 'bulk-long-confirm-desktop', { fullPage: false });
  await answerDialog(dialog, 'Keep them');

  const audits = (await engine.listAudit({})).items.length;
  holdAtChanged = 20_000;
  const progress = await startCancel();
  const first = (await progress.textContent()) ?? '';
  assert.match(first, /^Cancel all matching: [\d,]+ of at least 100,000 done… Stop$/);
  // Each poll shows what the operation has changed since (it waits at 20,000 or more, held).
  await progress.filter({ hasNotText: first }).waitFor();
  assert.match(
    (await progress.textContent()) ?? '',
    /^Cancel all matching: [1-9][\d,]* of at least 100,000 done… Stop$/,
  );
  await shot(page, 'bulk-long-progress-desktop');
  const told = await stop(progress);
  holdAtChanged = Number.POSITIVE_INFINITY;
  const changed = Number(/^Cancelled ([\d,]+)/.exec(told)?.[1]?.replaceAll(',', ''));
  assert.ok(changed > 0 && changed < stored, `stopped part way: ${told}`);
  const entries = (await engine.listAudit({})).items;
  assert.equal(entries.length, audits + 1, 'one audit entry for the operation');
  assert.deepEqual(
    [entries[0]?.action, entries[0]?.details.changed, entries[0]?.details.stopped],
    ['jobs.cancel', changed, true],
  );
  const queues = await engine.listQueues();
  assert.equal(
    queues.reduce((n, q) => n + q.counts.cancelled, 0),
    changed,
    'what it changed before the stop stays changed',
  );
  assert.deepEqual(problems, []);
});

test('a Stop that reaches the server after the end: the page says the operation ran to its end', async () => {
  await page.goto(url(list));
  await page.getByText(/^(at least )?[\d,]+ jobs.*: ready jobs in all queues with tenant=acme/).waitFor();
  const audits = (await engine.listAudit({})).items.length;
  // The progress line stays as the first answer drew it, and the Stop waits at the page.
  const reads = await holdProgressReads();
  const cancels = '**/api/v1/bulk-operations/*/cancel';
  const stopSent = new Promise<Route>((resolve) => void page.route(cancels, resolve));
  const progress = await startCancel();
  const [op] = engine.listBulkOperations();
  assert.ok(op !== undefined);
  await progress.getByRole('button', { name: 'Stop' }).click();
  const stopRoute = await stopSent;
  // The Stop goes on once the server has ended the operation (it runs on meanwhile, unheld): too late.
  while (engine.getBulkOperation(op.id).state === 'running') await new Promise((r) => setTimeout(r, 20));
  const ended = engine.getBulkOperation(op.id);
  assert.equal(ended.state, 'done');
  const stopAnswered = page.waitForResponse((r) => r.url().endsWith('/cancel'));
  await stopRoute.continue();
  await reads.release();
  await page.unroute(cancels);
  assert.equal((await (await stopAnswered).json()).state, 'done');
  // One notice, whether a poll or the Stop's answer saw the end first.
  const notice = page.getByText(/^Cancelled [\d,]+ ready jobs with tenant=acme in all queues/);
  await notice.first().waitFor();
  await progress.waitFor({ state: 'detached' });
  assert.deepEqual(await notice.allTextContents(), [
    `Cancelled ${ended.changed.toLocaleString('en-US')} ready jobs with tenant=acme in all queues ${tooLate}.`,
  ]);
  await shot(page, 'bulk-long-stop-too-late-desktop');
  const entries = (await engine.listAudit({})).items;
  assert.equal(entries.length, audits + 1, 'one audit entry for the operation');
  assert.deepEqual(
    [entries[0]?.details.operationId, entries[0]?.details.done, entries[0]?.details.stopped],
    [op.id, true, undefined],
  );
  assert.deepEqual(problems, []);
});

test('on a phone, dark: the progress line and its Stop button fit 375 px', async () => {
  await page.setViewportSize(phone);
  await page.emulateMedia({ colorScheme: 'dark' });
  await enqueueMatching(5_000);
  await page.goto(url(list));
  await page.getByText(/^(at least )?[\d,]+ jobs.*: ready jobs in all queues with tenant=acme/).waitFor();
  const reads = await holdProgressReads();
  const progress = await startCancel();
  await progress.filter({ hasText: /^Cancel all matching: [\d,]+ of (at least )?[\d,]+ done…/ }).waitFor();
  const button = progress.getByRole('button', { name: 'Stop' });
  const box = await button.boundingBox();
  assert.ok(box !== null && box.x >= 0 && box.x + box.width <= phone.width, JSON.stringify(box));
  assert.equal(await sidewaysOverflow(page), 0);
  await progress.scrollIntoViewIfNeeded();
  // The screen as the phone shows it (the whole page is 50 rows long).
  await shot(page, 'bulk-long-progress-dark-phone', { fullPage: false });
  await reads.release();
  await stopOrEnded(progress);
  await page.emulateMedia({ colorScheme: 'light' });
  assert.deepEqual(problems, []);
});

test('progress reads that hang: "stale since …", no pile-up, given up after 5 s, live again once answered', async () => {
  await page.setViewportSize(desktop);
  await enqueueMatching(5_000);
  await ui.context.clock.install();
  await page.goto(url(list));
  await page.getByText(/^(at least )?[\d,]+ jobs.*: ready jobs in all queues with tenant=acme/).waitFor();
  const { held, release } = await holdProgressReads();
  const progress = await startCancel();
  await pauseSoon(page);
  // Two poll periods (1 s) past the last good answer, plus the second between age checks.
  await page.clock.runFor(2500);
  await progress
    .filter({ hasText: /done… \(stale since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+, [^)]+\) Stop$/ })
    .waitFor({ timeout: 10_000 });
  assert.equal(held.length, 1, 'one poll waits; none started meanwhile');
  await shot(page, 'bulk-long-progress-stale-desktop');
  // The waiting read is given up after 5 s (readTimeoutMs), and the next one starts.
  await page.clock.runFor(6000);
  await page.waitForTimeout(300);
  assert.ok(held.length >= 2, `polling went on after the given-up read (${held.length} reads)`);
  assert.match((await progress.textContent()) ?? '', /stale since/);

  await release();
  await page.clock.resume();
  // Live again: either the progress line without "stale", or the notice that it ended.
  const ended = page.getByText(/^Cancelled [\d,]+ ready jobs with tenant=acme in all queues\.$/);
  await progress
    .filter({ hasNotText: /stale since/ })
    .or(ended)
    .first()
    .waitFor({ timeout: 15_000 });
  await stopOrEnded(progress);
  assert.deepEqual(problems, []);
});
