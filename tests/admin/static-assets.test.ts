/** The UI's files: content types, caching, client-side routes, and no way out of the asset set. */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { docsPath, withRoutes } from '../../scripts/gen-admin-ui-routes-doc.ts';
import { diskAssetSource, memoryAssetSource, safeAssetPath } from '../../src/admin/static-assets.ts';
import type { AssetSource } from '../../src/admin/types.ts';
import { isUiRoute, uiRoutePaths } from '../../src/admin/ui-routes.ts';
import { openTestAdmin, TestClient } from '../helpers/admin.ts';

const files = {
  'index.html': '<!doctype html><title>sepp</title>',
  'assets/app-ABCDEF12.js': 'console.log(1)',
  'assets/app-ABCDEF12.css': 'body{}',
  'favicon.svg': '<svg/>',
};

async function withAssets(source: AssetSource, fn: (client: TestClient) => Promise<void>): Promise<void> {
  const admin = await openTestAdmin({ assets: source });
  try {
    await fn(new TestClient(admin.app));
  } finally {
    admin.dispose();
  }
}

test('assets are served with their content type and cache policy; client routes get index.html', async () => {
  await withAssets(memoryAssetSource(files), async (client) => {
    const index = await client.get('/');
    assert.equal(index.status, 200);
    assert.equal(index.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(index.headers.get('cache-control'), 'no-cache');
    assert.match(index.headers.get('content-security-policy') ?? '', /script-src 'self'; style-src 'self'/);
    assert.doesNotMatch(index.headers.get('content-security-policy') ?? '', /unsafe-inline/);
    assert.equal(index.headers.get('x-frame-options'), 'DENY');
    assert.equal(index.headers.get('referrer-policy'), 'no-referrer');

    const js = await client.get('/assets/app-ABCDEF12.js');
    assert.equal(js.headers.get('content-type'), 'text/javascript; charset=utf-8');
    assert.equal(js.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.equal(
      (await client.get('/assets/app-ABCDEF12.css')).headers.get('content-type'),
      'text/css; charset=utf-8',
    );
    assert.equal((await client.get('/favicon.svg')).headers.get('content-type'), 'image/svg+xml');

    const route = await client.get<unknown>('/jobs/0190aaaa-0000-7000-8000-000000000000');
    assert.equal(route.status, 200);
    assert.equal(route.body, files['index.html']);
    assert.equal((await client.get('/assets/missing-ABCDEF12.js')).status, 404);

    const etag = js.headers.get('etag')!;
    const again = await client.request('GET', '/assets/app-ABCDEF12.js', undefined, {
      'if-none-match': etag,
    });
    assert.equal(again.status, 304);
  });
});

test('no request path reaches outside the asset set', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-assets-'));
  const outside = mkdtempSync(join(tmpdir(), 'sepp-outside-'));
  try {
    mkdirSync(join(dir, 'dist'));
    writeFileSync(join(dir, 'dist', 'index.html'), 'INDEX');
    writeFileSync(join(dir, 'secret.txt'), 'SECRET');
    writeFileSync(join(outside, 'secret.txt'), 'SECRET');
    symlinkSync(join(outside, 'secret.txt'), join(dir, 'dist', 'link.txt'));
    await withAssets(diskAssetSource(join(dir, 'dist')), async (client) => {
      const attempts = [
        '/../secret.txt',
        '/%2e%2e/secret.txt',
        '/%2E%2E/secret.txt',
        '/%2e%2e%2fsecret.txt',
        '/..%2fsecret.txt',
        '/..%5csecret.txt',
        '/%5c..%5csecret.txt',
        '/\\..\\secret.txt',
        '/%252e%252e/secret.txt',
        '/.%2e/secret.txt',
        `/${encodeURIComponent(join(dir, 'secret.txt'))}`,
        '//etc/passwd',
        '/%2fetc%2fpasswd',
        '/etc/passwd%00.html',
        '/link.txt',
        '/.hidden',
        '/C:%5cWindows%5cwin.ini',
      ];
      for (const path of attempts) {
        const reply = await client.get<unknown>(path);
        assert.doesNotMatch(String(reply.body), /SECRET|root:/, path);
        assert.ok(reply.status === 404 || reply.body === 'INDEX', `${path}: ${reply.status}`);
      }
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  }
});

test('safeAssetPath keeps only plain relative paths', () => {
  assert.equal(safeAssetPath('/'), 'index.html');
  assert.equal(safeAssetPath('/assets/app-X.js'), 'assets/app-X.js');
  for (const bad of [
    '/..',
    '/a/../b',
    '/%2e%2e/x',
    '/a\\b',
    '/a//b',
    '/%00',
    '/.env',
    '/%E0%A4%A',
    'relative',
  ]) {
    assert.equal(safeAssetPath(bad), null, bad);
  }
});

test('the API is never answered by the UI fallback', async () => {
  await withAssets(memoryAssetSource(files), async (client) => {
    const reply = await client.get('/api/v1/nothing');
    assert.equal(reply.status, 404);
    assert.equal(reply.body.error?.code, 'not_found');
  });
});

test('the UI routes get index.html; any other path that is no file is a 404, not the UI', async () => {
  await withAssets(memoryAssetSource(files), async (client) => {
    for (const path of [
      '/',
      '/login',
      '/queues',
      '/queues/',
      '/queues/emails',
      '/queues/emails.v2',
      '/queues/billing:eu',
      '/queues/billing%3Aeu',
      '/jobs',
      '/jobs/0190aaaa-0000-7000-8000-000000000000',
      '/dead-letters',
      '/schedules',
      '/schedules/nightly-report',
      '/enqueue',
      '/audit',
      '/config',
    ]) {
      const reply = await client.get<unknown>(path);
      assert.equal(reply.status, 200, path);
      assert.equal(reply.body, files['index.html'], path);
    }
    for (const path of [
      '/nope',
      '/healthcheck',
      '/queues/a/b',
      '/jobs/x/y',
      '/schedules/a/b',
      '/wp-login.php',
      '/admin',
      '/status',
    ]) {
      const reply = await client.get(path);
      assert.equal(reply.status, 404, path);
      assert.equal(reply.body.error?.code, 'not_found', path);
    }
  });
});

test("the server's list of UI routes is the UI's", () => {
  const main = readFileSync(new URL('../../ui/src/main.tsx', import.meta.url), 'utf8');
  const inUi = new Set<string>();
  for (const m of main.matchAll(/path === '([^']+)'/g)) inUi.add(m[1] ?? '');
  for (const m of main.matchAll(/match\('([^']+)', path\)/g)) inUi.add(m[1] ?? '');
  assert.deepEqual([...inUi].sort(), [...uiRoutePaths].sort());
  for (const path of uiRoutePaths) {
    assert.ok(isUiRoute(path.replace(/:[a-z]+/, 'x')), path);
  }
});

test("docs/admin.md's list of the UI's pages is generated from the router's (issue 36)", () => {
  const docs = readFileSync(docsPath, 'utf8');
  assert.equal(docs, withRoutes(docs), 'run npx tsx scripts/gen-admin-ui-routes-doc.ts');
  const sentence = /The UI's own pages \(([^)]*)\)/.exec(docs)?.[1];
  assert.ok(sentence !== undefined, "docs/admin.md has the sentence listing the UI's pages");
  const documented = [...sentence.matchAll(/`(\/[^`]*)`/g)].map((m) => m[1] ?? '');
  // The docs write a path's variable part as NAME or ID, the router as :name or :id.
  const routes = uiRoutePaths.map((path) => path.replace(/:([a-z]+)/g, (_, v: string) => v.toUpperCase()));
  assert.deepEqual([...documented].sort(), [...routes].sort());
});
