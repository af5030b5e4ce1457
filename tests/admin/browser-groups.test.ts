/**
 * Job groups in the admin UI (issue 17), in Debian's headless Chromium against
 * a real server: the jobs page filters by group and shows each job's group;
 * "Cancel all matching" and "Run all now" touch only the filtered group; a
 * waiting job's page moves it to another group or out of its group, a leased
 * job's page does not offer it, and a refusal shows in the page's banner.
 * Screenshots (SEPP_SCREENSHOTS=1) in tests/artifacts/admin/ (jobs-group-*, job-group-*).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Page, Route } from 'playwright-core';
import type { Engine } from '../../src/engine/engine.ts';
import { enc } from '../helpers/admin.ts';
import {
  answerDialog,
  logIn,
  pauseSoon,
  shot,
  sidewaysOverflow,
  startUiServer,
  type UiServer,
  visit,
  watch,
} from '../helpers/browser.ts';

const user = { name: 'ops', password: 'groups-browser-password', role: 'operator' } as const;

let ui: UiServer;
let engine: Engine;
let page: Page;
let url: (path: string) => string;
const problems: string[] = [];

/** `n` jobs of `group` (none: no group) in queue `tenants`; `delayMs` makes them scheduled. */
async function jobs(group: string | undefined, n: number, delayMs = 0): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const { jobId } = await engine.enqueue({
      queue: 'tenants',
      type: 'sync',
      payload: enc(`{"n":${i}}`),
      delayMs,
      ...(group === undefined ? {} : { group }),
    });
    ids.push(jobId);
  }
  return ids;
}

const states = (ids: string[]) => Promise.all(ids.map(async (id) => (await engine.getJob(id)).state));

before(async () => {
  ui = await startUiServer(user);
  engine = ui.t.server.engine;
  url = (path) => `${ui.adminUrl}${path}`;
  // The pages' timers run on Playwright's clock, which flows as real time does unless a test stops it.
  await ui.context.clock.install();
  page = watch(ui.context.pages()[0] ?? (await ui.context.newPage()), problems);
  await logIn(page, url('/'), user);
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
});

after(() => ui?.dispose());

test('the jobs page filters by group; cancel all matching and run all now touch only that group', async () => {
  const acme = await jobs('acme', 3);
  const globex = await jobs('globex', 2);
  const loose = await jobs(undefined, 1);

  await visit(page, url('/jobs?queue=tenants&state=ready'));
  await page.getByRole('columnheader', { name: 'Group' }).waitFor();
  const rows = page.locator('section.card table tbody tr');
  await rows.nth(5).waitFor(); // every group's
  await page.getByLabel('Group', { exact: true }).fill('acme');
  // The filter's phrase shows over its own answer only: for a frame (an effect's), the page showed
  // it over the rows of the list before, and a test that waited for it counted those (or none,
  // once they went). The page's clock stands still meanwhile, so that frame would last.
  await pauseSoon(page);
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.getByText('ready jobs in tenants in group acme', { exact: false }).first().waitFor();
  assert.equal(await rows.count(), 3, 'the rows under the phrase are the filtered ones');
  await page.clock.resume();
  assert.match(page.url(), /[?&]group=acme/, 'the filter is in the address');
  assert.deepEqual(
    (await rows.allInnerTexts()).filter((r) => !r.includes('acme')),
    [],
  );
  assert.equal(await sidewaysOverflow(page), 0);
  await shot(page, 'jobs-group-filter-desktop');

  await page.getByRole('button', { name: 'Cancel all matching' }).click();
  const dialog = page.getByRole('dialog', { name: 'Cancel 3 ready jobs of group acme in tenants?' });
  await dialog.waitFor();
  await shot(page, 'jobs-group-cancel-confirm-desktop');
  await answerDialog(dialog, 'Cancel 3 jobs');
  await page.getByText('Cancelled 3 ready jobs of group acme in tenants.').waitFor();
  assert.deepEqual(await states(acme), ['cancelled', 'cancelled', 'cancelled']);
  assert.deepEqual(
    await states([...globex, ...loose]),
    ['ready', 'ready', 'ready'],
    'other groups are untouched',
  );

  const laterAcme = await jobs('acme', 2, 3_600_000);
  const laterGlobex = await jobs('globex', 1, 3_600_000);
  await visit(page, url('/jobs?queue=tenants&state=scheduled&group=globex'));
  await page.getByRole('button', { name: 'Run all now' }).click();
  await answerDialog(
    page.getByRole('dialog', { name: 'Run 1 scheduled jobs of group globex in tenants now?' }),
    'Run 1 job now',
  );
  await page.getByText('1 scheduled jobs of group globex in tenants run now.').waitFor();
  assert.deepEqual(await states(laterGlobex), ['ready']);
  assert.deepEqual(await states(laterAcme), ['scheduled', 'scheduled'], "acme's scheduled jobs still wait");
});

test("a waiting job's page changes its group or takes it out; a leased job's page does not offer it", async () => {
  const [waiting, other] = await jobs('globex', 2, 60_000);
  await visit(page, url(`/jobs/${waiting}`));
  await page.getByRole('button', { name: 'Change group' }).click();
  const dialog = page.getByRole('dialog', { name: 'Change the group' });
  const field = dialog.getByLabel('Group');
  assert.equal(await field.inputValue(), 'globex', 'the field starts with the current group');
  await field.fill('initech');
  await shot(page, 'job-group-change-dialog-desktop');
  // The dialog closes in the same draw as its answer's notice, not a frame or a timer later: the
  // notice showed beside the dialog still open, whose "Change group" a click by name found beside
  // the page's. Meanwhile the page's clock stands still and the job's next read waits (its answer
  // draws the page again), so a close left to either would not have come.
  const jobRead = url(`/api/v1/jobs/${waiting}`);
  const heldReads: Route[] = [];
  let holding = true;
  await page.route(jobRead, (route) => (holding ? heldReads.push(route) : route.continue()));
  await pauseSoon(page);
  await dialog.getByRole('button', { name: 'Change group' }).click();
  await page.getByText(/moved to group initech/).waitFor();
  assert.equal(await page.locator('dialog[open]').count(), 0, 'the dialog closed with its notice');
  holding = false;
  for (const route of heldReads) await route.continue();
  await page.unroute(jobRead);
  await page.clock.resume();
  assert.equal((await engine.getJob(waiting!)).group, 'initech');
  assert.equal((await engine.getJob(other!)).group, 'globex');
  await page.locator('.facts').getByText('initech').waitFor();
  await shot(page, 'job-group-changed-desktop');

  await page.getByRole('button', { name: 'Change group' }).click();
  await dialog.getByLabel('Group').fill('');
  await answerDialog(dialog, 'Change group');
  await page.getByText(/has no group now/).waitFor();
  assert.equal((await engine.getJob(waiting!)).group, null);

  // A name the server refuses: its message shows in the page's banner.
  await page.getByRole('button', { name: 'Change group' }).click();
  await dialog.getByLabel('Group').fill('no spaces allowed');
  await answerDialog(dialog, 'Change group');
  await page.locator('.banner-error').getByText(/group/).waitFor();
  await shot(page, 'job-group-refused-desktop');
  assert.equal((await engine.getJob(waiting!)).group, null);

  // Leased: no Change group.
  const [leased] = await engine.reserve({ queues: ['tenants'], workerId: 'w-1', leaseMs: 600_000 });
  assert.ok(leased);
  await visit(page, url(`/jobs/${leased.id}`));
  await page.getByRole('button', { name: 'Cancel job' }).waitFor();
  assert.equal(await page.getByRole('button', { name: 'Change group' }).count(), 0);

  const unexpected = problems.filter((p) => !/400 \(Bad Request\)/.test(p));
  assert.deepEqual(unexpected, []);
});
