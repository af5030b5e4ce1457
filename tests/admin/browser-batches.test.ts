/**
 * The batches page (task batchlife) in Debian's headless Chromium against a real server:
 * the navigation and a batch's page lead to it; it lists batches newest first with their
 * state, owner and counts, filters by state (the select applies at once) and by owner,
 * pages, and a row opens its batch. Screenshots (SEPP_SCREENSHOTS=1):
 * tests/artifacts/admin/batches-{desktop,phone}.png.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
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

const user = { name: 'batches', password: 'batches-browser-password', role: 'viewer' } as const;

let ui: UiServer;
let engine: Engine;
let page: Page;
const problems: string[] = [];
const url = (path: string) => `${ui.adminUrl}${path}`;
const ids: string[] = [];

before(async () => {
  ui = await startUiServer(user);
  engine = ui.t.server.engine;
  // Oldest first: an ended batch of etl's, a sealed one of etl's, and billing's open ones.
  const member = { queue: 'rows', type: 'row', payload: enc('{}') };
  ids.push((await engine.createBatch({ owner: 'etl', seal: true })).batch.id);
  ids.push((await engine.createBatch({ owner: 'etl', jobs: [member, member], seal: true })).batch.id);
  for (let i = 0; i < 3; i++) ids.push((await engine.createBatch({ owner: 'billing' })).batch.id);
  page = watch(ui.context.pages()[0] ?? (await ui.context.newPage()), problems);
  await logIn(page, url('/'), user);
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
});
after(() => ui?.dispose());

const rows = () => page.getByRole('table', { name: 'batches' }).locator('tbody tr');
/** Waits until the table shows exactly `n` batches. */
async function showing(n: number): Promise<void> {
  await rows()
    .nth(n - 1)
    .waitFor();
  await rows().nth(n).waitFor({ state: 'detached' });
}
/** The short ids the rows show (the last 8 characters), in order. */
async function shown(): Promise<string[]> {
  await rows().first().waitFor();
  const texts = await rows().allTextContents();
  return texts.map((text) => /…([0-9a-f]{8})/.exec(text)?.[1] ?? text);
}
const short = (id: string) => id.slice(-8);

test('the batches page lists them newest first, filters by state and owner, and opens one', async () => {
  await page.getByRole('link', { name: 'Batches', exact: true }).click();
  await page.getByRole('heading', { name: 'Batches' }).waitFor();
  assert.deepEqual(await shown(), [...ids].reverse().map(short));
  assert.match((await rows().nth(3).textContent()) ?? '', /sealed.*etl/);
  assert.match((await rows().nth(4).textContent()) ?? '', /ended.*etl/);
  assert.equal(await sidewaysOverflow(page), 0);
  await shot(page, 'batches-desktop');

  await page.getByLabel('State').selectOption('open');
  await page.waitForURL(/state=open/);
  await showing(3);
  assert.deepEqual(await shown(), ids.slice(2).reverse().map(short));

  await visit(page, url('/batches'));
  await page.getByLabel('Owner (API key)').fill('etl');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.waitForURL(/owner=etl/);
  await showing(2);
  assert.deepEqual(await shown(), [short(ids[1]!), short(ids[0]!)]);

  await page.getByRole('link', { name: `…${short(ids[1]!)}` }).click();
  await page.waitForURL(new RegExp(`/batches/${ids[1]}$`));
  await page.getByTestId('batch-ended').waitFor();
  // And back: the batch's page leads to the list.
  await page.getByRole('link', { name: 'All batches' }).click();
  await page.waitForURL(/\/batches$/);
  await rows().first().waitFor();
  assert.deepEqual(problems, []);
});

test('the batches page pages, and fits a phone', async () => {
  await visit(page, url('/batches'));
  await page.setViewportSize(phone);
  await rows().first().waitFor();
  assert.equal(await sidewaysOverflow(page), 0);
  await shot(page, 'batches-phone');
  await page.setViewportSize({ width: 1280, height: 800 });
  // 50 to a page: 46 more make a second page holding the oldest.
  for (let i = 0; i < 46; i++) await engine.createBatch({ owner: 'bulk' });
  await visit(page, url('/batches'));
  await showing(50);
  await page.getByRole('button', { name: /Next/ }).click();
  await page.waitForURL(/cursor=/);
  await showing(1);
  assert.deepEqual(await shown(), [short(ids[0]!)]);
  assert.deepEqual(problems, []);
});
