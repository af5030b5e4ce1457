/**
 * The after-run secret check (scripts/secret-grep.mjs) on logs made up here:
 * it finds a registered secret, a bearer token and a password hash, masks
 * them when it shows the line, and a full run that captured nothing fails.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, test } from 'node:test';
import { checkCapturedLogs } from '../../scripts/secret-grep.mjs';

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function capture(logs: Record<string, string[]>, secrets: { kind: string; value: string }[]): void {
  dir = mkdtempSync(join(tmpdir(), 'sepp-secret-grep-'));
  mkdirSync(join(dir, 'logs'));
  mkdirSync(join(dir, 'secrets'));
  for (const [name, lines] of Object.entries(logs))
    writeFileSync(join(dir, 'logs', name), `${lines.join('\n')}\n`);
  writeFileSync(join(dir, 'secrets', '1.jsonl'), secrets.map((s) => `${JSON.stringify(s)}\n`).join(''));
}

const key = 'sepp-secret-grep-key-0123456789';

test('clean logs pass, and the summary counts lines, captures and secrets', () => {
  capture(
    {
      'server-1-1.log': ['{"event":"server.started"}', '{"event":"rpc.call","caller":"billing"}'],
      'cli-1-2.log': ['not authenticated: send `authorization: Bearer <key>`', 'Bearer <redacted>'],
    },
    [{ kind: 'key', value: key }],
  );
  const check = checkCapturedLogs(dir, { requireEvidence: true });
  assert.deepEqual(check.problems, []);
  assert.equal(check.ok, true);
  assert.equal(
    check.summary,
    'secret check: 4 log lines from 2 captures (1 cli, 1 server) checked against 1 secrets: none found',
  );
});

test('a registered secret, a bearer token and a password hash are found, and shown masked', () => {
  capture(
    {
      'server-1-1.log': ['{"event":"ok"}', `{"event":"rpc.call","error":"bad key ${key}"}`],
      'process-1-2.log': ['header Bearer abcdef0123456789', 'hash $scrypt$ln=10,r=8,p=1$c2FsdA$aGFzaA'],
    },
    [{ kind: 'key', value: key }],
  );
  const check = checkCapturedLogs(dir, { requireEvidence: true });
  assert.equal(check.ok, false);
  assert.equal(check.problems.length, 3);
  assert.match(check.problems[0]!, /process-1-2\.log:1: bearer token: header Bearer \[token\]$/);
  assert.match(check.problems[1]!, /process-1-2\.log:2: scrypt hash: hash \[scrypt hash\]$/);
  assert.match(check.problems[2]!, /server-1-1\.log:2: key: .*bad key \[key\]/);
  assert.ok(check.problems.every((p) => !p.includes(key) && !p.includes('abcdef0123456789')));
  assert.match(check.summary, /3 found$/);
});

test('a full run that captured no line, no server or no secret fails; a filtered run may capture nothing', () => {
  capture({}, []);
  const full = checkCapturedLogs(dir, { requireEvidence: true });
  assert.equal(full.ok, false);
  assert.equal(full.problems.length, 3);
  assert.equal(checkCapturedLogs(dir, { requireEvidence: false }).ok, true);
});
