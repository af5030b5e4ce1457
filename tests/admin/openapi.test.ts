/** The OpenAPI document and the app's routes describe the same API, with the role of each operation. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { honoPath } from '../../src/admin/route-spec.ts';
import { openTestAdmin, TestClient } from '../helpers/admin.ts';

interface OpenApiDoc {
  openapi: string;
  paths: Record<
    string,
    Record<string, { 'x-sepp-role': string; responses: Record<string, unknown>; description: string }>
  >;
  components: { schemas: Record<string, unknown> };
}

test('every registered API route is in /api/openapi.json and every documented operation is registered', async () => {
  const admin = await openTestAdmin();
  try {
    const reply = await new TestClient(admin.app).get<OpenApiDoc>('/api/openapi.json');
    assert.equal(reply.status, 200);
    const doc = reply.body;
    assert.equal(doc.openapi, '3.1.0');

    // What Hono actually routes under /api, minus middleware and the catch-all.
    const registered = new Set(
      admin.app.routes
        .filter((r) => r.path.startsWith('/api/') && !r.path.includes('*') && r.method !== 'ALL')
        .map((r) => `${r.method} ${r.path}`),
    );
    const documented = new Set(
      Object.entries(doc.paths).flatMap(([path, operations]) =>
        Object.keys(operations).map((method) => `${method.toUpperCase()} ${honoPath(path)}`),
      ),
    );
    assert.deepEqual([...registered].sort(), [...documented].sort());

    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const where = `${method} ${path}`;
        assert.match(operation['x-sepp-role'], /^(public|viewer|operator|admin)$/, where);
        assert.ok(operation.responses['200'], where);
        assert.match(operation.description, /No login needed|Requires the \w+ role/, where);
        if (operation['x-sepp-role'] !== 'public')
          assert.ok(operation.responses['401'] && operation.responses['403'], where);
      }
    }
    // Every $ref points at a schema that exists.
    for (const [, name] of JSON.stringify(doc).matchAll(/"#\/components\/schemas\/([A-Za-z]+)"/g)) {
      assert.ok(doc.components.schemas[name!], `schema ${name}`);
    }
  } finally {
    admin.dispose();
  }
});

test('a list of job ids in the admin API says the live batch limit rather than a fixed maxItems', async () => {
  const admin = await openTestAdmin();
  try {
    const doc = (await new TestClient(admin.app).get<OpenApiDoc>('/api/openapi.json')).body;
    const jobIds: Record<string, unknown>[] = [];
    const visit = (node: unknown): void => {
      if (typeof node !== 'object' || node === null) return;
      for (const [key, value] of Object.entries(node)) {
        if (key === 'jobIds' && typeof value === 'object' && value !== null)
          jobIds.push(value as Record<string, unknown>);
        visit(value);
      }
    };
    visit(doc);
    assert.ok(jobIds.length >= 3, `${jobIds.length} jobIds properties`);
    for (const property of jobIds) {
      assert.equal(property.maxItems, undefined, 'a reload may change limits.max_batch_jobs');
      assert.equal(property.description, 'at most limits.max_batch_jobs');
    }
  } finally {
    admin.dispose();
  }
});
