/**
 * Every PostgreSQL migration says which servers may keep running on the schema it makes
 * (`-- servers-from: N`, docs/upgrading.md "On PostgreSQL"): scripts/gen-migrations.mjs
 * refuses one without that line, or with a version it cannot name, so `npm run lint`
 * (its --check) fails before such a migration is embedded.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { renderMigrations } from '../../scripts/gen-migrations.mjs';
import { migrations } from '../../src/store/postgres/gen/migrations.ts';

test('a PostgreSQL migration without a servers-from rule, or with one past its version, is refused', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-rules-'));
  try {
    const render = (sql: string) => {
      writeFileSync(join(dir, '0001_first.sql'), sql);
      return renderMigrations({ schemaDir: dir, label: 'rules', serversFrom: true });
    };
    const refused = /rules\/0001_first\.sql: needs one line `-- servers-from: N — why`, 1 ≤ N ≤ 1: /;
    assert.throws(() => render('-- 0001: no rule\nSELECT 1;\n'), refused);
    assert.throws(() => render('-- 0001: a rule past it\n-- servers-from: 2 — why\nSELECT 1;\n'), refused);
    assert.throws(
      () => render('-- servers-from: 1 — once\n-- servers-from: 1 — twice\nSELECT 1;\n'),
      refused,
    );
    assert.match(
      render('-- 0001: the first\n-- servers-from: 1 — the first\nSELECT 1;\n'),
      /serversFrom: 1,/,
    );
    // The SQLite store's migrations need none.
    assert.doesNotMatch(renderMigrations({ schemaDir: dir, label: 'rules' }), /serversFrom/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  // Each embedded rule names its own version or an earlier one.
  for (const m of migrations) assert.ok(m.serversFrom >= 1 && m.serversFrom <= m.version, m.name);
});

test('docs/upgrading.md names the schema below which an upgrade to this release cannot be rolled', () => {
  // The database's rule after every migration is the greatest; servers of an older schema are shut out.
  const rule = Math.max(...migrations.map((m) => m.serversFrom));
  const first = migrations.find((m) => m.serversFrom === rule);
  const file = new URL('../../docs/upgrading.md', import.meta.url);
  const upgrading = readFileSync(file, 'utf8').replace(/\s+/g, ' ');
  const said = `an upgrade from PostgreSQL schema ${rule - 1} or older to ${first?.version} or later cannot be rolled`;
  assert.ok(upgrading.includes(said), `docs/upgrading.md ("On PostgreSQL") should say: ${said}`);
});
