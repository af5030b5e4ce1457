/**
 * docs/schedules.md, run as a reader would: its sepp.toml starts a server (and
 * passes `sepp config check`), its TypeScript and Python examples run against
 * it, every `sepp schedules …` command of its shell block runs in order and
 * succeeds, and its SQL query answers on the database afterwards.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { runSepp } from '../helpers/cli.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { testStoreKind } from '../helpers/test-store.ts';

const root = join(import.meta.dirname, '..', '..');
const docs = readFileSync(join(root, 'docs', 'schedules.md'), 'utf8');
const execFileAsync = promisify(execFile);

/** The fenced code blocks of one language, in order. */
function blocks(language: string): string[] {
  return [...docs.matchAll(new RegExp(`^\`\`\`${language}\\n([\\s\\S]*?)^\`\`\`$`, 'gm'))].map(
    (m) => m[1] ?? '',
  );
}

function only(language: string): string {
  const found = blocks(language);
  assert.equal(found.length, 1, `one ${language} block in docs/schedules.md`);
  return found[0] ?? '';
}

describe('docs/schedules.md', () => {
  let t: TestServer;
  let dir: string;
  let env: Record<string, string>;

  before(async () => {
    t = await startTestServer({ toml: only('toml') });
    env = { SEPP_SERVER: t.address };
    mkdirSync(join(root, 'dist'), { recursive: true });
    // Inside the repository (dist/ is ignored), so the examples find its node_modules.
    dir = mkdtempSync(join(root, 'dist', 'schedules-docs-'));
  });
  after(async () => {
    await t.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the sepp.toml passes `sepp config check` and its schedules are on the server', async () => {
    const file = join(dir, 'sepp.toml');
    writeFileSync(file, only('toml'));
    const check = await runSepp(['config', 'check', file]);
    assert.equal(check.code, 0, check.stderr);
    const names = (await t.server.engine.listSchedules()).map((s) => [s.name, s.source]);
    assert.deepEqual(names, [
      ['nightly-report', 'config'],
      ['sync', 'config'],
    ]);
  });

  test('the TypeScript example runs (against the SDK sources)', async () => {
    const file = join(dir, 'schedules-example.mts');
    const source = only('ts').replace(
      "'@sepp-queue/client'",
      JSON.stringify(join(root, 'clients/typescript/src/index.ts')),
    );
    writeFileSync(file, source);
    const { stdout } = await execFileAsync(process.execPath, ['--import', 'tsx', file], {
      cwd: root,
      env: { ...process.env, ...env },
      timeout: 120_000,
    });
    assert.match(stdout, /^created cleanup next run /m);
    assert.match(stdout, /^nightly-report /m);
    assert.equal((await t.server.engine.getSchedule('cleanup')).overlap, 'skip');
  });

  test('the Python example runs', async () => {
    const file = join(dir, 'schedules_example.py');
    writeFileSync(file, only('python'));
    const { stdout } = await execFileAsync('/usr/bin/python3', [file], {
      cwd: dir,
      env: {
        ...process.env,
        ...env,
        PYTHONPATH: join(root, 'clients/python/src'),
        PYTHONDONTWRITEBYTECODE: '1',
      },
      timeout: 120_000,
    });
    assert.match(stdout, /^created weekly-digest \[\d+\]/m);
    assert.equal((await t.server.engine.getSchedule('weekly-digest')).timezone, 'America/New_York');
  });

  test('every command of the shell block succeeds, in order', async () => {
    const commands = only('sh')
      .split('\n')
      .filter((line) => line.trim() !== '');
    assert.ok(commands.length >= 7);
    for (const line of commands) {
      const [program, ...args] = line.trim().split(/\s+/);
      assert.equal(program, 'sepp', line);
      const run = await runSepp(args, env);
      assert.equal(run.code, 0, `${line}: ${run.stderr}`);
      if (line.includes('--json')) {
        const shown = JSON.parse(run.stdout) as { name: string; nextRuns: string[] };
        assert.equal(shown.name, 'nightly-report');
        assert.equal(shown.nextRuns.length, 10);
      }
      if (line === 'sepp schedules')
        assert.match(run.stdout, /^nightly-report\s+30 2 \* \* \* \(Europe\/Berlin\)/m);
    }
    assert.equal(
      (await t.server.engine.listSchedules()).some((s) => s.name === 'cleanup'),
      false,
      'deleted',
    );
    const [trigger] = (await t.server.engine.listAudit({ action: 'schedule.trigger' })).items;
    assert.equal(trigger?.target, 'schedule:nightly-report');
    // The trigger is the schedule's newest run, with its job (issue 36: runs in the CLI too).
    const shown = await runSepp(['schedules', 'show', 'nightly-report'], env);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(
      shown.stdout,
      /^last runs \(newest first; the last 20 are kept\)\n {2}\S+ {2}triggered {2}job [0-9a-f-]{36}( {2}by anonymous)?$/m,
    );
  });

  test('the commands say what went wrong, with the exit codes of docs/cli.md', async () => {
    const missing = await runSepp(['schedules', 'show', 'no-such'], env);
    assert.equal(missing.code, 5, missing.stderr);
    assert.match(missing.stderr, /^sepp: schedule no-such does not exist/);
    const fromConfig = await runSepp(['schedules', 'delete', 'nightly-report'], env);
    assert.equal(fromConfig.code, 1, fromConfig.stderr);
    assert.match(fromConfig.stderr, /declared in the config file .* cannot be deleted over the API/);
    const badNext = await runSepp(['schedules', 'show', 'sync', '--next', '0'], env);
    assert.equal(badNext.code, 2, badNext.stderr);
    const shown = await runSepp(['schedules', 'show', 'sync'], env);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /^schedule {2,}every 15m$/m);
    assert.match(shown.stdout, /^jitter {2,}30s$/m, 'durations read as the config writes them');
    assert.match(shown.stdout, /^source {2,}config \(change it in sepp\.toml\)$/m);
    assert.match(shown.stdout, /^next runs\n( {2}\d{4}-\d\d-\d\dT.*Z\n){5}/m);
  });

  test('the SQL query answers on the database', async () => {
    if (testStoreKind === 'postgres') {
      // The section is about the SQLite file: on PostgreSQL there is none, and the same rows
      // are in the store's schema (docs/postgres.md, "The schema").
      const names = await t.server.engine.store.read((view) => view.schedules.all());
      assert.deepEqual(
        names.map((r) => r.name),
        ['nightly-report', 'sync', 'weekly-digest'],
      );
      assert.ok(names.every((r) => r.next_tick_ms !== null));
      await t.server.shutdown();
      assert.equal(existsSync(join(t.dataDir, 'sepp.db')), false, 'no SQLite file on PostgreSQL');
      return;
    }
    await t.server.shutdown();
    const db = new Database(join(t.dataDir, 'sepp.db'), { readonly: true });
    try {
      const rows = db.prepare(only('sql')).all() as { name: string; next_tick_utc: string | null }[];
      assert.deepEqual(
        rows.map((r) => r.name),
        ['nightly-report', 'sync', 'weekly-digest'],
      );
      assert.ok(rows.every((r) => r.next_tick_utc !== null));
    } finally {
      db.close();
    }
  });
});
