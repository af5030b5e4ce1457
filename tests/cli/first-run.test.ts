/**
 * What a first run of the `sepp` command meets (issue 30's CLI list), checked against a
 * real server; what concerns the process (what it creates in its working directory, a
 * start) on the real command (the bundle), the rest in-process (tests/helpers/cli.ts;
 * SEPP_TEST_CLI=process runs them as processes too): `sepp` alone prints the help and
 * starts nothing; a missing argument is named; a typo'd queue gets "did you mean"
 * wherever a QUEUE is taken; an interval reads as the config writes it; a backup off a
 * terminal or with --json prints no progress; a start that fails leaves no data
 * directory it made.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SeppClient } from '../../clients/typescript/src/index.ts';
import { type CliRun, cliEntry, runCli } from '../helpers/cli.ts';
import { bundleServer } from '../helpers/process-server.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

describe('the sepp command on a first run', { timeout: 600_000 }, () => {
  let bundle: ReturnType<typeof bundleServer>;
  let entry: string[];
  let t: TestServer;
  let work = '';
  /** `process`: the real command, for what it does to its process's working directory (and serve). */
  const sepp = (
    args: string[],
    options: { cwd?: string; server?: boolean; process?: boolean } = {},
  ): Promise<CliRun> =>
    runCli(args, {
      ...(options.process === true || args[0] === 'serve' ? { entry } : {}),
      env: { SEPP_CONFIG: '', ...(options.server === false ? {} : { SEPP_SERVER: t.address }) },
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    });
  /** A fresh, empty working directory: whatever a command creates in it shows. */
  const emptyDir = () => mkdtempSync(join(work, 'cwd-'));

  before(async () => {
    bundle = bundleServer();
    entry = cliEntry(bundle.bundle);
    work = mkdtempSync(join(tmpdir(), 'sepp-first-run-'));
    t = await startTestServer({
      toml: '[[schedules]]\nname = "sync"\nqueue = "sync"\ntype = "pull"\ninterval_ms = "15m"\n',
    });
    const client = SeppClient.connect(t.address);
    await client.enqueue('emails', 'send');
    await client.close();
  });
  after(async () => {
    await t?.dispose();
    rmSync(work, { recursive: true, force: true });
    bundle?.dispose();
  });

  test('`sepp` alone prints the help, with how to start a server, and creates nothing', async () => {
    const cwd = emptyDir();
    const run = await sepp([], { cwd, server: false, process: true });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stderr, '');
    assert.match(run.stdout, /`sepp serve` runs the server/);
    assert.match(run.stdout, /^ {2}sepp serve {2,}Run the server/m);
    assert.deepEqual(readdirSync(cwd), [], 'no data directory');
  });

  test('`sepp --help` has one block of exit codes', async () => {
    const run = await sepp(['--help'], { server: false });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.match(/Exit codes/g)?.length, 1, run.stdout);
  });

  test("a server's flag without `serve` is refused, saying so, and creates nothing", async () => {
    const cwd = emptyDir();
    const run = await sepp(['--data-dir', 'data', '--log-level', 'debug'], {
      cwd,
      server: false,
      process: true,
    });
    assert.equal(run.code, 2);
    assert.equal(
      run.stderr,
      'sepp: --data-dir is a flag of sepp serve: to run the server, sepp serve --data-dir data --log-level debug\n',
    );
    assert.deepEqual(readdirSync(cwd), []);
  });

  test('a missing argument is named', async () => {
    const run = await sepp(['enqueue', 'emails']);
    assert.equal(run.code, 2);
    assert.equal(run.stderr, 'sepp: missing TYPE: sepp enqueue QUEUE TYPE (see sepp enqueue --help)\n');
    const show = await sepp(['queue', 'show']);
    assert.equal(show.stderr, 'sepp: missing QUEUE: sepp queue show QUEUE (see sepp queue show --help)\n');
  });

  for (const args of [
    ['queue', 'show', 'emials'],
    ['dlq', 'list', 'emials'],
  ]) {
    test(`sepp ${args.join(' ')}: not found, and the queue meant`, async () => {
      const run = await sepp(args);
      assert.equal(run.code, 5, run.stderr);
      assert.match(
        run.stderr,
        /^sepp: queue "?emials"? does not exist.*; did you mean emails\? \(`sepp queues` lists the queues\)\n$/,
      );
    });
  }

  test('an interval schedule reads as the config writes it', async () => {
    const run = await sepp(['schedules']);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^sync\s+every 15m\s+sync\/pull\s/m);
  });

  test('a backup off a terminal, and with --json, prints no progress', async () => {
    const plain = await sepp(['backup', join(work, 'plain.db')]);
    assert.equal(plain.code, 0, plain.stderr);
    assert.match(plain.stderr, /^backup written to \S+plain\.db \([\d.]+ MiB, sha256 [0-9a-f]{16}…\)\n$/);
    const json = await sepp(['backup', join(work, 'json.db'), '--json']);
    assert.equal(json.code, 0, json.stderr);
    assert.equal(json.stderr, '');
    assert.match(json.stdout, /"sha256"/);
  });

  test('serve with a port in use leaves no data directory behind', async () => {
    const dataDir = join(work, 'fresh', 'data');
    const run = await sepp(
      [
        'serve',
        '--data-dir',
        dataDir,
        '--grpc-listen',
        '127.0.0.1:0',
        '--admin-listen',
        new URL(t.metricsUrl).host,
      ],
      { server: false },
    );
    assert.equal(run.code, 1);
    assert.match(run.stderr, /^sepp: cannot start: cannot listen for HTTP .*EADDRINUSE/);
    assert.equal(existsSync(join(work, 'fresh')), false, 'the directories it made are gone');
  });
});
