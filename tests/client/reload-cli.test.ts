/**
 * A running `sepp serve` changed from outside, as an operator does it: queue
 * settings with `sepp queue set|show|reset` and `sepp queues --json`; the
 * config file reread on a real SIGHUP (a new key works, the old one is
 * refused; a bad file is refused, logged, and the server runs on; a limit
 * lowered and raised); `sepp config check --against-running` and `sepp config reload`.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runSepp } from '../helpers/cli.ts';
import { type ServerProcess, startServerProcess } from '../helpers/process-server.ts';
import { registerSecret } from '../helpers/secret-log.ts';

const keyA = 'sepp-secret-cli-reload-a-0123456789';
const keyB = 'sepp-secret-cli-reload-b-0123456789';
registerSecret('API key', keyA);
registerSecret('API key', keyB);
const metricsToken = 'sepp-secret-cli-reload-metrics-0123456789';
registerSecret('/metrics token', metricsToken);
const apiKey = (name: string, key: string) =>
  `[[grpc.api_keys]]\nname = "${name}"\nrole = "admin"\nkey = "${key}"\n`;

/** Resolves with the next log line (JSON) of `event` written from now on; fails after a generous guard. */
function nextLog(server: ServerProcess, event: string): Promise<Record<string, unknown>> {
  const from = server.logs().length;
  return new Promise((resolve, reject) => {
    const find = () => {
      for (const line of server.logs().slice(from).split('\n')) {
        if (!line.includes(`"${event}"`)) continue;
        clearTimeout(timer);
        server.child.stderr?.off('data', find);
        resolve(JSON.parse(line) as Record<string, unknown>);
        return;
      }
    };
    const timer = setTimeout(() => reject(new Error(`no ${event} in the log:\n${server.logs()}`)), 30_000);
    server.child.stderr?.on('data', find);
    find();
  });
}

describe('changing a running sepp from the command line', () => {
  let dir: string;
  let configFile: string;
  let server: ServerProcess;
  const sepp = (args: string[], key = keyA) =>
    runSepp([...args, '--server', `127.0.0.1:${server.port}`], { SEPP_API_KEY: key });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sepp-reload-cli-'));
    configFile = join(dir, 'sepp.toml');
    writeFileSync(configFile, `${apiKey('a', keyA)}[queues.jobs]\nmax_attempts = 7\n`, { mode: 0o600 });
    server = await startServerProcess(join(dir, 'data'), ['--config', configFile]);
  });
  after(async () => {
    await server?.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  test('sepp queue set, show and reset; sepp queues --json shows each value with its source', async () => {
    const set = await sepp(['queue', 'set', 'jobs', 'max_attempts=3', 'backoff_base_ms=2s']);
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stdout, /^set max_attempts, backoff_base_ms on jobs$/m);
    assert.match(set.stdout, /^max_attempts\s+3\s+override\s+7$/m);
    assert.match(set.stdout, /^backoff_base_ms\s+2s\s+override\s+1s$/m);

    const bad = await sepp(['queue', 'set', 'jobs', 'max_attempts=0']);
    assert.equal(bad.code, 2);
    assert.match(
      bad.stderr,
      /queues\.jobs\.max_attempts: 0 is below the minimum 1; set a number between 1 and 1000/,
    );

    const json = await sepp(['queues', '--json']);
    const queues = JSON.parse(json.stdout) as {
      name: string;
      settingValues: { key: string; source: string; value: unknown; fileValue: unknown }[];
    }[];
    const maxAttempts = queues
      .find((q) => q.name === 'jobs')
      ?.settingValues.find((s) => s.key === 'max_attempts');
    assert.deepEqual(maxAttempts, { key: 'max_attempts', value: 3, source: 'override', fileValue: 7 });

    const reset = await sepp(['queue', 'reset', 'jobs', 'max_attempts']);
    assert.equal(reset.code, 0, reset.stderr);
    assert.match(reset.stdout, /^max_attempts\s+7\s+file \[queues\.jobs\]$/m);
    assert.match(reset.stdout, /^backoff_base_ms\s+2s\s+override\s+1s$/m);
    assert.equal((await sepp(['queue', 'reset', 'jobs', '--all'])).code, 0);
    assert.match((await sepp(['queue', 'show', 'jobs'])).stdout, /^backoff_base_ms\s+1s\s+default$/m);
  });

  test('SIGHUP rereads the file: a new key works, the old one is refused; a bad file changes nothing', async () => {
    writeFileSync(
      configFile,
      `${apiKey('b', keyB)}[queues.jobs]\nmax_attempts = 7\n[server]\ndurability = "relaxed"\n`,
    );
    const check = await sepp(['config', 'check', '--against-running']);
    assert.equal(check.code, 0, check.stderr);
    assert.match(check.stdout, /OK as a reload \(nothing was applied\)/);
    assert.match(check.stdout, /would change at once:\n {2}grpc\.api_keys: added b; removed a\n/);
    assert.match(
      check.stdout,
      /needs a restart \(keeps its running value until then\):\n {2}server\.durability: full -> relaxed\n/,
    );

    const reloaded = nextLog(server, 'config.reloaded');
    const waiting = nextLog(server, 'config.restart_required');
    server.child.kill('SIGHUP');
    const line = await reloaded;
    assert.match(String(line.changed), /grpc\.api_keys \(added b; removed a\)/);
    assert.match(String((await waiting).settings), /server\.durability full -> relaxed/);
    assert.equal((await sepp(['queues'], keyA)).code, 4, 'the old key is refused');
    assert.equal((await sepp(['queues'], keyB)).code, 0, 'the new key works');

    writeFileSync(configFile, `${apiKey('b', keyB)}[queues.jobs]\nmax_attempts = "many"\n`);
    const refused = nextLog(server, 'config.reload_refused');
    server.child.kill('SIGHUP');
    assert.match(
      String((await refused).problems),
      /queues\.jobs\.max_attempts: "many" is not a whole number/,
    );
    assert.equal((await sepp(['queues'], keyB)).code, 0, 'the server runs on, on its configuration');
    const dry = await sepp(['config', 'check', '--against-running'], keyB);
    assert.equal(dry.code, 1);
    assert.match(
      dry.stderr,
      /1 problem\(s\); the server keeps its configuration\n {2}queues\.jobs\.max_attempts: /,
    );
  });

  test('SIGHUP never lowers security; sepp config reload --allow-security-downgrade does, on loopback', async () => {
    writeFileSync(configFile, '[queues.jobs]\nmax_attempts = 7\n');
    const refused = nextLog(server, 'config.reload_refused');
    server.child.kill('SIGHUP');
    const line = await refused;
    assert.equal(line.level, 'error');
    assert.match(
      String(line.problems),
      /grpc\.api_keys: the file has no API key.*--allow-security-downgrade/,
    );
    assert.equal((await sepp(['queues'], '')).code, 4, 'a call without a key is still refused');

    const plain = await sepp(['config', 'reload'], keyB);
    assert.equal(plain.code, 1);
    assert.match(plain.stderr, /grpc\.api_keys: the file has no API key/);
    // The refusal shows the whole difference too, as a dry run would.
    assert.match(
      plain.stderr,
      /the file differs from the running settings in:\n {2}grpc\.api_keys: removed b\n/,
    );
    const allowed = await sepp(['config', 'reload', '--allow-security-downgrade'], keyB);
    assert.equal(allowed.code, 0, allowed.stderr);
    assert.match(allowed.stdout, /changed:\n {2}grpc\.api_keys: removed b\n/);
    // What it lowered, in its answer as in the log line.
    assert.match(allowed.stdout, /\nlowered security, as asked:\n {2}grpc\.api_keys\n$/);
    assert.equal((await sepp(['queues'], '')).code, 0, 'no key needed now, as asked');

    writeFileSync(configFile, `${apiKey('b', keyB)}[queues.jobs]\nmax_attempts = 7\n`);
    const back = await sepp(['config', 'reload'], '');
    assert.equal(back.code, 0, 'adding a key back needs no flag');
    assert.doesNotMatch(back.stdout, /lowered security/);
    assert.equal((await sepp(['queues'], '')).code, 4);
  });

  test('SIGHUP changes a limit at once: lowered, the next call meets it; raised, the next passes', async () => {
    const withLimits = (limits: string) =>
      `${apiKey('b', keyB)}[queues.jobs]\nmax_attempts = 7\n[limits]\n${limits}`;
    writeFileSync(configFile, withLimits('max_page_size = 2\nmax_result_bytes = "1KiB"\n'));
    const check = await sepp(['config', 'check', '--against-running'], keyB);
    assert.equal(check.code, 0, check.stderr);
    assert.match(check.stdout, /would change at once:\n {2}limits\.max_page_size: 1000 -> 2\n/);
    assert.match(
      check.stdout,
      /needs a restart \(keeps its running value until then\):\n {2}limits\.max_result_bytes: 64KiB -> 1KiB\n/,
    );
    const sighup = async () => {
      const reloaded = nextLog(server, 'config.reloaded');
      server.child.kill('SIGHUP');
      return reloaded;
    };
    assert.equal((await sighup()).changed, 'limits.max_page_size 1000 -> 2');
    const over = await sepp(['queues', '--page-size', '5'], keyB);
    assert.notEqual(over.code, 0);
    assert.match(over.stderr, /page_size is 5; it must be an integer from 1 to 2 \(limits\.max_page_size\)/);

    // Raising it is no security downgrade: SIGHUP, which never lowers security, applies it.
    writeFileSync(configFile, withLimits('max_page_size = 10\n'));
    assert.equal((await sighup()).changed, 'limits.max_page_size 2 -> 10');
    assert.equal((await sepp(['queues', '--page-size', '5'], keyB)).code, 0);
    writeFileSync(configFile, `${apiKey('b', keyB)}[queues.jobs]\nmax_attempts = 7\n`);
    assert.equal((await sighup()).changed, 'limits.max_page_size 10 -> 1000');
  });

  test('sepp config reload applies the file, as SIGHUP does, and shows each value, never a secret', async () => {
    writeFileSync(
      configFile,
      `${apiKey('b', keyB)}[queues.jobs]\nmax_attempts = 9\n[server]\ndurability = "relaxed"\n[telemetry]\nmetrics_token = "${metricsToken}"\n`,
    );
    const run = await sepp(['config', 'reload'], keyB);
    assert.equal(run.code, 0, run.stderr);
    const [changed = '', restart = ''] = run.stdout.split(
      'needs a restart (keeps its running value until then):\n',
    );
    assert.match(changed, /reloaded\nchanged:\n/);
    assert.match(changed, /^ {2}queues\.jobs\.max_attempts: 7 -> 9$/m);
    assert.match(changed, /^ {2}telemetry\.metrics_token_sha256: changed$/m);
    assert.equal(restart, '  server.durability: full -> relaxed\n');
    for (const secret of [metricsToken, createHash('sha256').update(metricsToken).digest('hex')])
      assert.ok(!run.stdout.includes(secret), 'the answer carries no secret');
    // The same answer for scripts: each setting with its values, a secret with a summary instead.
    const dry = await sepp(['config', 'check', '--against-running', '--json'], keyB);
    assert.equal(dry.code, 0, dry.stderr);
    assert.deepEqual(JSON.parse(dry.stdout).changes, [
      {
        key: 'server.durability',
        oldValue: 'full',
        newValue: 'relaxed',
        summary: null,
        restartRequired: true,
      },
    ]);
    assert.match(
      (await sepp(['queue', 'show', 'jobs'], keyB)).stdout,
      /^max_attempts\s+9\s+file \[queues\.jobs\]$/m,
    );
    assert.equal(await server.stop('SIGTERM'), 0, 'and stops cleanly after all that');
  });
});
