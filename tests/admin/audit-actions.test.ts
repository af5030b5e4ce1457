/**
 * The audit log's action names (issue 36): the admin UI's action filter
 * offers src/admin/audit-actions.ts, so that list must hold every action the
 * server writes. Each place that writes one names it as a string literal on
 * the line of (or the line after) its audit call — `request.audit('…'`,
 * `rpcAudit(…, '…'`, `action: '…'`, a route's `audits: '…'` — so the test
 * reads src/ and compares. A log event (`logger.info('schedule.added')`) is
 * not an audit action and is not picked up.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { auditActions } from '../../src/admin/audit-actions.ts';

const root = new URL('../..', import.meta.url).pathname;
const src = join(root, 'src');
const actionLiteral =
  /'((?:session|config|queue|job|jobs|flow|batch|dead_letters|schedule|worker)\.[a-z_]+(?:\.[a-z_]+)?)'/g;
const auditContext = /audit|action/i;
const logContext = /logger|\blog\.|\.(?:info|warn|error|debug)\(/;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'gen' ? [] : sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every action name written in src/, with where. */
function writtenActions(): Map<string, string> {
  const found = new Map<string, string>();
  for (const file of sources(src)) {
    // The role table names what a role may do (config.read is no write), not what is audited.
    if (file.endsWith('config/admin-roles.ts') || file.endsWith('admin/audit-actions.ts')) continue;
    const lines = readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, i) => {
      const context = `${lines[i - 1] ?? ''}\n${line}`;
      if (!auditContext.test(context) || logContext.test(line)) return;
      for (const [, name] of line.matchAll(actionLiteral)) {
        if (name !== undefined && !found.has(name)) found.set(name, `${relative(root, file)}:${i + 1}`);
      }
    });
  }
  return found;
}

test('the audit filter lists every action the server writes, and nothing else', () => {
  const written = writtenActions();
  const listed = new Set<string>(auditActions);
  const missing = [...written].filter(([name]) => !listed.has(name)).map(([name, at]) => `${name} (${at})`);
  assert.deepEqual(missing, [], 'written but not in src/admin/audit-actions.ts');
  assert.deepEqual(
    auditActions.filter((name) => !written.has(name)),
    [],
    'listed in src/admin/audit-actions.ts but written nowhere',
  );
  assert.equal(listed.size, auditActions.length, 'no action twice');
});

test('the scan finds the actions that are easy to miss: multi-line rpc calls, conditional names, the engine', () => {
  const written = writtenActions();
  for (const name of [
    'queue.settings.reset',
    'dead_letters.delete_all',
    'schedule.create',
    'config.reload',
  ]) {
    assert.ok(written.has(name), `${name} found`);
  }
});
