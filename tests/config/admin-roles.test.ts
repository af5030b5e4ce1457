/**
 * One table of what each admin UI role may do (src/config/admin-roles.ts): the
 * server takes every route's role from it, `sepp config example` prints it and
 * docs/admin.md shows it, so none of them can say another thing (the example
 * once let operators purge while the server asked for admin).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { adminRolesComment, adminRoleTable, roleFor } from '../../src/config/admin-roles.ts';
import { exampleConfig } from '../../src/config/example.ts';
import { openTestAdmin, TestClient } from '../helpers/admin.ts';

const adminDoc = readFileSync(new URL('../../docs/admin.md', import.meta.url), 'utf8');

test("docs/admin.md's roles table is the table, row by row", () => {
  const section = adminDoc.slice(adminDoc.indexOf('## Roles'));
  const rows = [...section.matchAll(/^\| `(\w+)`\s*\| (.*?)\s*\|$/gm)].map((m) => ({
    role: m[1],
    can: m[2],
  }));
  assert.deepEqual(
    rows,
    adminRoleTable.map((r) => ({ role: r.role, can: r.can })),
  );
});

test('the config example prints the table: purge is for admins, as the server has it', () => {
  assert.ok(exampleConfig.includes(adminRolesComment()));
  const comment = adminRolesComment().replace(/\n# /g, ' ');
  const operator = comment.slice(comment.indexOf('"operator"'), comment.indexOf('"admin"'));
  assert.doesNotMatch(operator, /purge/);
  assert.match(comment.slice(comment.indexOf('"admin"')), /purge/);
});

test('every route that changes something needs the role the table gives its action', async () => {
  const admin = await openTestAdmin();
  try {
    const reply = await new TestClient(admin.app).get<{
      paths: Record<string, Record<string, { 'x-sepp-role': string; 'x-sepp-audit-action'?: string }>>;
    }>('/api/openapi.json');
    const audited = Object.entries(reply.body.paths).flatMap(([path, operations]) =>
      Object.entries(operations)
        .filter(([, op]) => op['x-sepp-audit-action']?.startsWith('session.') === false)
        .map(([method, op]) => ({
          where: `${method} ${path}`,
          role: op['x-sepp-role'],
          action: op['x-sepp-audit-action'],
        })),
    );
    assert.ok(audited.length >= 20, `${audited.length} audited routes`);
    for (const { where, role, action } of audited) {
      assert.equal(role, roleFor(action as Parameters<typeof roleFor>[0]), where);
    }
    assert.equal(roleFor('queue.purge'), 'admin');
  } finally {
    admin.dispose();
  }
});
