/**
 * Every button and badge of every page fits a 375 px phone (issue 36: things were
 * clipped at phone width — the queue page's settings put their sources in a third
 * column off the screen), in Debian's headless Chromium against a real server holding
 * jobs in each state, a schedule and a worker's lease: each visible button and badge
 * lies inside the screen, and no page scrolls sideways — in light and in dark mode. Screenshots
 * (the queue and a leased job's page, and any page with a clipped button; `-dark` in dark
 * mode; a selection's bar with SEPP_SCREENSHOTS=1): tests/artifacts/admin/phone-buttons-*.png.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import type { Engine } from '../../src/engine/engine.ts';
import { enc } from '../helpers/admin.ts';
import {
  failureShot,
  logIn,
  phone,
  shot,
  sidewaysOverflow,
  startUiServer,
  type UiServer,
  visit,
  watch,
} from '../helpers/browser.ts';

const user = { name: 'phone', password: 'phone-buttons-password', role: 'admin' } as const;
const toml = `[queues.mail]\n\n[[schedules]]\nname = "nightly-report"\ncron = "30 2 * * *"\nqueue = "mail"\ntype = "report"\n`;

let ui: UiServer;
let engine: Engine;
let page: Page;
const ids: Record<string, string> = {};
const problems: string[] = [];

before(async () => {
  ui = await startUiServer(user, toml);
  engine = ui.t.server.engine;
  for (const kind of ['dead', 'leased', 'ready', 'scheduled'] as const) {
    const { jobId } = await engine.enqueue({
      queue: 'mail',
      type: 'welcome',
      payload: enc('{"to":"ada@example.com"}'),
      ...(kind === 'scheduled' ? { delayMs: 3_600_000 } : {}),
    });
    ids[kind] = jobId;
    if (kind === 'dead' || kind === 'leased') {
      const [job] = await engine.reserve({ queues: ['mail'], maxJobs: 1, workerId: 'mailer-1' });
      assert.equal(job?.id, jobId);
      if (kind === 'dead') {
        await engine.nack({
          jobId,
          attempt: 1,
          error: 'no such mailbox',
          errorClass: 'SmtpError',
          directive: { kind: 'dead_letter' },
        });
      }
    }
  }
  page = watch(ui.context.pages()[0] ?? (await ui.context.newPage()), problems);
  await page.setViewportSize(phone);
  await logIn(page, `${ui.adminUrl}/`, user);
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
});
after(() => ui?.dispose());

/**
 * The visible buttons and badges of the page that reach past either side of the screen, by name.
 * One look inside the page at all of them: a round trip per button (isVisible, boundingBox) cost
 * 1.7 s of CPU on a page of 58 (2026-12-06). Visible as Playwright's isVisible has it: shown by
 * checkVisibility(), `visibility: visible`, a box of some size.
 */
async function clipped(): Promise<string[]> {
  return page
    .getByRole('button')
    .or(page.locator('.badge'))
    .evaluateAll(
      (all, width) =>
        all.flatMap((element) => {
          const box = element.getBoundingClientRect();
          const style = element.ownerDocument.defaultView?.getComputedStyle(element);
          const visible =
            element.checkVisibility() && style?.visibility === 'visible' && box.width > 0 && box.height > 0;
          if (!visible || (box.x >= -0.5 && box.x + box.width <= width + 0.5)) return [];
          return [`${element.textContent?.trim()} (${Math.round(box.x)}…${Math.round(box.x + box.width)})`];
        }),
      phone.width,
    );
}

for (const colorScheme of ['light', 'dark'] as const) {
  test(`at 375 px, ${colorScheme}: every button of every page is inside the screen, and no page scrolls sideways`, async () => {
    await page.emulateMedia({ colorScheme });
    const suffix = colorScheme === 'dark' ? '-dark' : '';
    // Two pages in a row are of different parts of the UI: visit() moves within the app then,
    // and loads the page again only within one part (tests/helpers/browser.ts).
    const pages: [string, string, string][] = [
      ['/', 'Dashboard', 'dashboard'],
      ['/queues', 'Queues', 'queues'],
      ['/jobs?queue=mail', 'Jobs', 'jobs'],
      ['/queues/mail', 'mail', 'queue'],
      [`/jobs/${ids.dead}`, 'Job', 'job-dead'],
      ['/queues/mail/settings', 'mail', 'queue-settings'],
      [`/jobs/${ids.leased}`, 'Job', 'job-leased'],
      ['/dead-letters?queue=mail', 'Dead letters', 'dead-letters'],
      [`/jobs/${ids.ready}`, 'Job', 'job-ready'],
      ['/schedules', 'Schedules', 'schedules'],
      [`/jobs/${ids.scheduled}`, 'Job', 'job-scheduled'],
      ['/workers', 'Workers', 'workers'],
      ['/audit', 'Audit log', 'audit'],
      ['/enqueue', 'Enqueue', 'enqueue'],
    ];
    const found: string[] = [];
    for (const [path, heading, name] of pages) {
      await visit(page, `${ui.adminUrl}${path}`);
      await page.getByRole('heading', { level: 1 }).filter({ hasText: heading }).first().waitFor();
      await page.getByText('Loading…').first().waitFor({ state: 'detached' });
      const out = await clipped();
      const overflow = await sidewaysOverflow(page);
      if (out.length > 0 || overflow > 0) {
        found.push(`${path}: ${out.join(', ')}${overflow > 0 ? ` (scrolls ${overflow} px sideways)` : ''}`);
      }
      if (out.length > 0 || overflow > 0) await failureShot(page, `phone-buttons-${name}${suffix}`);
      // The pages with the most buttons in their headers, to look at (SEPP_SCREENSHOTS=1).
      else if (name === 'queue' || name === 'job-leased') await shot(page, `phone-buttons-${name}${suffix}`);
    }
    // What opens on a page: the folded filters, a selection's actions, the confirmations.
    const check = async (what: string, name: string) => {
      const out = await clipped();
      const overflow = await sidewaysOverflow(page);
      if (out.length > 0 || overflow > 0) {
        found.push(`${what}: ${out.join(', ')}${overflow > 0 ? ` (scrolls ${overflow} px sideways)` : ''}`);
        await failureShot(page, `phone-buttons-${name}${suffix}`);
      }
    };
    await visit(page, `${ui.adminUrl}/jobs?queue=mail`);
    await page
      .getByText(/^Filters/)
      .first()
      .click();
    await check('jobs, filters open', 'jobs-filters');
    await page.getByRole('checkbox').first().check();
    await check('jobs, rows selected', 'jobs-selected');
    await visit(page, `${ui.adminUrl}/dead-letters?queue=mail`);
    await page.getByRole('button', { name: /^Requeue all/ }).click();
    await page.getByRole('dialog').waitFor();
    await check('dead letters, requeue all asked', 'dead-letters-dialog');
    await visit(page, `${ui.adminUrl}/dead-letters?queue=mail`);
    await page.getByLabel(`Select job ${ids.dead}`).check();
    await page.getByText('1 selected', { exact: true }).waitFor();
    await check('dead letters, rows selected', 'dead-letters-selected');
    await shot(page, `phone-buttons-dead-letters-selected${suffix}`);
    await visit(page, `${ui.adminUrl}/dead-letters?queue=mail`);
    await page.getByRole('button', { name: /^Choose/ }).click();
    await check('dead letters, a top-errors group chosen', 'top-errors-chosen');
    await visit(page, `${ui.adminUrl}/jobs/${ids.dead}`);
    await page.getByRole('button', { name: 'Delete' }).first().click();
    await page.getByRole('dialog').waitFor();
    await check('a job, delete asked', 'job-delete-dialog');
    assert.deepEqual(found, []);
    assert.deepEqual(problems, []);
  });
}
