/**
 * The Queues page follows the server's pages (issue 29: /api/v1/queues holds at
 * most limits.max_page_size queues per answer): with a page size of 2 and 5
 * queues, Next › walks through all of them in name order, each once, and
 * « First goes back. In Debian's headless Chromium against a real server.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { logIn, startUiServer, type UiServer, visit, watch } from '../helpers/browser.ts';

const user = { name: 'viewer', password: 'queue-pages-browser-password', role: 'viewer' } as const;
const names = ['q-a', 'q-b', 'q-c', 'q-d', 'q-e'];

let ui: UiServer;
let page: Page;
const problems: string[] = [];

before(async () => {
  ui = await startUiServer(user, '[limits]\nmax_page_size = 2\n');
  const engine = ui.t.server.engine;
  await engine.enqueueBatch(names.map((queue) => ({ queue, type: 't', payload: new Uint8Array() })));
  page = watch(ui.context.pages()[0] ?? (await ui.context.newPage()), problems);
  await logIn(page, `${ui.adminUrl}/`, user);
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
});

after(() => ui?.dispose());

/**
 * Waits until the table's first queue is (or is not) `name`: the page changed.
 * Locators, not page.waitForFunction: the UI's CSP (script-src 'self') refuses
 * the eval a string predicate needs whenever it has to poll.
 */
const firstCell = () => page.locator('section.card table tbody tr').first().locator('th');
const exactly = (name: string) => new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
const firstShownIs = (name: string) =>
  firstCell()
    .filter({ hasText: exactly(name) })
    .waitFor();
const firstShownIsNot = (name: string) =>
  firstCell()
    .filter({ hasNotText: exactly(name) })
    .waitFor();

/** The queue names the table shows now. */
async function shown(): Promise<string[]> {
  const cells = page.locator('section.card table tbody tr th');
  await cells.first().waitFor();
  return cells.allInnerTexts();
}

test('Next › walks every page of queues in name order; « First goes back', async () => {
  await visit(page, `${ui.adminUrl}/queues`);
  await page.getByRole('heading', { name: 'Queues' }).waitFor();
  const seen: string[] = [];
  const next = page.getByRole('button', { name: 'Next ›' });
  for (let pageNo = 0; pageNo < 5; pageNo++) {
    const onPage = await shown();
    assert.ok(onPage.length <= 2, `page ${pageNo + 1}: ${onPage.join(', ')}`);
    seen.push(...onPage);
    if (await next.isDisabled()) break;
    await next.click();
    await firstShownIsNot(onPage[0] ?? '');
  }
  assert.deepEqual(seen, names, 'every queue once, in name order');
  await page.getByRole('button', { name: '« First' }).click();
  await firstShownIs('q-a');
  assert.deepEqual(await shown(), ['q-a', 'q-b']);
  assert.deepEqual(problems, []);
});
