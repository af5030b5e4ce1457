/**
 * Every way a user can get the `sepp` command wrong, or meet a machine or a
 * server it cannot use, ends the same way: one line on stderr starting
 * `sepp:` that names the mistake, the exit code docs/cli.md documents, no
 * stack trace, no Node warning, and no hang, against real servers. A case
 * about the process runs the real command (the bundle, as `node dist/sepp.cjs`
 * runs it): every start (`serve`), Node's warnings and TLS (printed by the
 * process, not the command), start-up with a broken TMPDIR, standard input.
 * The others run in-process (tests/helpers/cli.ts; SEPP_TEST_CLI=process runs
 * them as processes too).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { SeppClient } from '../../clients/typescript/src/index.ts';
import { buildInfo } from '../../src/build-info.ts';
import { migrations as postgresMigrations } from '../../src/store/postgres/gen/migrations.ts';
import { migrations } from '../../src/store/sqlite/gen/migrations.ts';
import { type CliRun, cliEntry, runCli } from '../helpers/cli.ts';
import { bundleServer } from '../helpers/process-server.ts';
import { apiKeysToml, startTestServer, type TestServer } from '../helpers/server.ts';
import { selfSignedCertificate } from '../helpers/tls.ts';

const adminKey = 'errors-admin-key-0123456789';
const producerKey = 'errors-producer-key-0123456789';

interface Case {
  name: string;
  args: () => string[];
  env?: () => Record<string, string>;
  cwd?: () => string;
  input?: string;
  /** Run as the real command in a process (serve cases always are): see the top of the file. */
  process?: true;
  code: number;
  /** What the one line on stderr must say (after `sepp: `). */
  stderr: RegExp;
  /** When the command succeeds: what stdout holds. */
  stdout?: RegExp;
}

/** The one-line rule, whatever the case. */
function assertOneLine(run: CliRun, where: string): void {
  assert.equal(run.timedOut, false, `${where}: hung (killed after the deadline)`);
  const lines = run.stderr.split('\n').filter((l) => l !== '');
  assert.equal(lines.length, 1, `${where}: one line on stderr, got:\n${run.stderr}`);
  assert.match(lines[0] ?? '', /^sepp: \S/, where);
  assert.doesNotMatch(run.stderr, /\n\s+at |Error: |DeprecationWarning|SSL routines|node:internal/, where);
}

const canMount =
  process.getuid?.() === 0 && spawnSync('mount', ['--version'], { stdio: 'ignore' }).status === 0;

describe('CLI and start-up errors: one line, the documented exit code, no hang', { timeout: 600_000 }, () => {
  let bundle: ReturnType<typeof bundleServer>;
  let entry: string[];
  let t: TestServer;
  let tlsServer: TestServer;
  let work: string;
  let roMount: string | undefined;
  let readOnlyDir = '';
  let jobId = '';
  let caFile = '';

  before(async () => {
    bundle = bundleServer();
    entry = cliEntry(bundle.bundle);
    work = mkdtempSync(join(tmpdir(), 'sepp-cli-errors-'));
    t = await startTestServer({
      toml: apiKeysToml([
        { name: 'ops', role: 'admin', key: adminKey },
        { name: 'app', role: 'producer', key: producerKey },
      ]),
    });
    const client = SeppClient.connect(t.address, { apiKey: adminKey });
    jobId = (await client.enqueue('known', 't')).id;
    await client.enqueue('emails', 't');
    await client.close();
    const cert = selfSignedCertificate(work);
    caFile = cert.certFile;
    tlsServer = await startTestServer({ toml: cert.toml('grpc') });
    writeFileSync(join(work, 'a-file'), 'not a directory');
    mkdirSync(join(work, 'not-a-db'));
    writeFileSync(join(work, 'not-a-db', 'sepp.db'), 'this is not SQLite'.repeat(100));
    writeFileSync(join(work, 'bad.toml'), '[server]\ndurability = "nope"\n');
    // A data directory a newer sepp wrote: its schema version is past what this one knows.
    mkdirSync(join(work, 'from-the-future'));
    const future = new Database(join(work, 'from-the-future', 'sepp.db'));
    future.pragma(`user_version = ${migrations.at(-1)!.version + 1}`);
    future.close();
    // A sepp.toml in the working directory: a bad flag must not be blamed on it.
    mkdirSync(join(work, 'cwd'));
    writeFileSync(join(work, 'cwd', 'sepp.toml'), '[server]\ndurability = "full"\n');
    if (canMount) {
      // A read-only file system: what a data directory on a read-only mount meets (root ignores modes).
      roMount = join(work, 'ro');
      mkdirSync(roMount);
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', roMount]);
      mkdirSync(join(roMount, 'data'));
      execFileSync('mount', ['-o', 'remount,ro', roMount]);
      readOnlyDir = join(roMount, 'data');
    } else {
      readOnlyDir = join(work, 'read-only');
      mkdirSync(readOnlyDir);
      chmodSync(readOnlyDir, 0o500);
    }
  });
  after(async () => {
    await t?.dispose();
    await tlsServer?.dispose();
    if (roMount !== undefined) execFileSync('umount', [roMount]);
    rmSync(work, { recursive: true, force: true });
    bundle?.dispose();
  });

  const serveArgs = (...more: string[]) => [
    'serve',
    '--grpc-listen',
    '127.0.0.1:0',
    '--admin-listen',
    '127.0.0.1:0',
    ...more,
  ];
  const server = () => ({ SEPP_SERVER: t.address, SEPP_API_KEY: adminKey });
  const adminPort = () => new URL(t.metricsUrl).port;

  const cases: Case[] = [
    // Start-up: the data directory.
    {
      name: 'a data directory where nothing can be created (/proc) fails at once instead of spinning',
      args: () => serveArgs('--data-dir', '/proc/nope'),
      code: 1,
      stderr:
        /^sepp: cannot start: cannot create the data directory \/proc\/nope: .*\(--data-dir, server\.data_dir\)$/,
    },
    {
      name: 'a read-only data directory says it is read-only',
      args: () => serveArgs('--data-dir', readOnlyDir),
      code: 1,
      stderr:
        /^sepp: cannot start: cannot write in the data directory .*: (the file system is read-only \(EROFS\)|permission denied \(EACCES\))/,
    },
    {
      name: 'a data directory to create on a read-only file system',
      args: () => serveArgs('--data-dir', join(readOnlyDir, 'new', 'deeper')),
      code: 1,
      stderr:
        /^sepp: cannot start: cannot create the data directory .*new\/deeper: (the file system is read-only|permission denied)/,
    },
    {
      name: 'a file in the way of the data directory',
      args: () => serveArgs('--data-dir', join(work, 'a-file')),
      code: 1,
      stderr: /^sepp: cannot start: cannot use the data directory .*a-file: it is a file, not a directory/,
    },
    {
      name: 'a file in the way of a parent of the data directory',
      args: () => serveArgs('--data-dir', join(work, 'a-file', 'data')),
      code: 1,
      stderr: /a-file is a file, not a directory/,
    },
    {
      name: 'a data directory holding something that is not a database',
      args: () => serveArgs('--data-dir', join(work, 'not-a-db')),
      code: 1,
      stderr: /^sepp: cannot start: .*not-a-db\/sepp\.db is not a SQLite database/,
    },
    {
      name: 'a database a newer sepp wrote is refused, naming both versions',
      args: () => serveArgs('--data-dir', join(work, 'from-the-future')),
      code: 1,
      stderr: new RegExp(
        `^sepp: cannot start: the database has schema version ${migrations.at(-1)!.version + 1}, written by a newer sepp; this sepp ${buildInfo.version.replaceAll('.', '\\.')} knows schema versions up to ${migrations.at(-1)!.version}: .*docs/upgrading\\.md`,
      ),
    },
    {
      // (A gRPC port in use fails the same way, but grpc-js also prints its own
      // "E No address added" line until its logging goes through sepp's logger.)
      name: 'an admin port in use',
      // The last --admin-listen wins, as with any flag given twice.
      args: () => serveArgs('--data-dir', join(work, 'busy'), '--admin-listen', `127.0.0.1:${adminPort()}`),
      code: 1,
      stderr:
        /^sepp: cannot start: cannot listen for HTTP on 127\.0\.0\.1:\d+: .*EADDRINUSE.*\(server\.admin_listen\)$/,
    },
    // Start-up: the configuration, the same line and exit code from serve and config check.
    {
      name: 'a bad flag is blamed on the flag, not on ./sepp.toml',
      args: () => serveArgs('--data-dir', join(work, 'never'), '--durability', 'nope'),
      cwd: () => join(work, 'cwd'),
      code: 2,
      stderr: /^sepp: server\.durability \(from --durability\): "nope" is not one of "full", "relaxed"$/,
    },
    {
      name: 'a bad variable is blamed on the variable',
      args: () => serveArgs('--data-dir', join(work, 'never')),
      env: () => ({ SEPP_LOG_FORMAT: 'xml' }),
      cwd: () => join(work, 'cwd'),
      code: 2,
      stderr: /^sepp: server\.log_format \(from SEPP_LOG_FORMAT\): "xml" is not one of/,
    },
    {
      name: 'serve with a bad config file: exit 2',
      args: () => serveArgs('--config', join(work, 'bad.toml')),
      code: 2,
      stderr: /^sepp: .*bad\.toml: server\.durability: "nope" is not one of "full", "relaxed"$/,
    },
    {
      name: 'config check of the same file: the same line, the same exit 2',
      args: () => ['config', 'check', join(work, 'bad.toml')],
      code: 2,
      stderr: /^sepp: .*bad\.toml: server\.durability: "nope" is not one of "full", "relaxed"$/,
    },
    {
      name: 'config check of a file that is not there',
      args: () => ['config', 'check', join(work, 'missing.toml')],
      code: 2,
      stderr: /missing\.toml does not exist/,
    },
    // Usage.
    {
      name: 'an unknown command suggests the nearest',
      args: () => ['pausse', 'emails'],
      code: 2,
      stderr: /^sepp: unknown command "pausse"; did you mean pause\?/,
    },
    {
      name: 'a missing argument',
      args: () => ['enqueue', 'q'],
      code: 2,
      stderr: /^sepp: missing TYPE: sepp enqueue QUEUE TYPE \(see sepp enqueue --help\)$/,
    },
    {
      name: 'a flag without its value',
      args: () => ['enqueue', 'q', 't', '--file'],
      code: 2,
      stderr: /^sepp: --file needs a value/,
    },
    {
      name: 'a choice that is not one',
      args: () => ['queues', '--output', 'xml'],
      code: 2,
      stderr: /^sepp: --output "xml" is not one of "table", "json"/,
    },
    {
      name: '--priority abc is refused before anything is sent',
      args: () => ['enqueue', 'q', 't', '--priority', 'abc'],
      env: server,
      code: 2,
      stderr: /^sepp: --priority "abc" is not a whole number from 0 to 9$/,
    },
    {
      name: '--max-attempts 1.5 is refused before anything is sent',
      args: () => ['enqueue', 'q', 't', '--max-attempts', '1.5'],
      env: server,
      code: 2,
      stderr: /^sepp: --max-attempts "1\.5" is not a whole number/,
    },
    {
      name: 'schedules show --next 1.5 is refused before anything is sent',
      args: () => ['schedules', 'show', 'nightly', '--next', '1.5'],
      env: server,
      code: 2,
      stderr: /^sepp: --next "1\.5" is not a whole number from 1 to 100$/,
    },
    {
      name: 'a --delay that is no duration says what is',
      args: () => ['enqueue', 'q', 't', '--delay', '10 parsecs'],
      env: server,
      code: 2,
      stderr: /^sepp: --delay .*e\.g\. "30s", or an integer of milliseconds$/,
    },
    {
      name: 'a job id that is no UUID',
      args: () => ['job', 'not-a-job-id'],
      env: server,
      code: 2,
      stderr: /is not a job id/,
    },
    {
      name: 'a backup into a directory that does not exist',
      args: () => ['backup', join(work, 'nodir', 'x.db')],
      env: server,
      code: 2,
      stderr: /^sepp: cannot write .*nodir\/x\.db: the directory .*nodir does not exist$/,
    },
    {
      name: 'an admin call with a producer key names the role it needs',
      args: () => ['pause', 'known'],
      env: () => ({ SEPP_SERVER: t.address, SEPP_API_KEY: producerKey }),
      code: 4,
      stderr:
        /^sepp: permission denied: API key app has role producer, which may not call PauseQueue \(needs the admin role\)$/,
    },
    // Typos create nothing.
    {
      name: 'pausing a queue nobody used: not found, the queue meant, and how to do it on purpose',
      args: () => ['pause', 'emials'],
      env: server,
      code: 5,
      stderr:
        /^sepp: queue emials does not exist: no job was ever enqueued to it; did you mean emails\? \(--create pauses it anyway\)$/,
    },
    {
      name: 'deleting a queue that holds jobs',
      args: () => ['queue', 'delete', 'known'],
      env: server,
      code: 1,
      stderr: /^sepp: queue known holds 1 job \(ready 1\); only an empty queue can be deleted/,
    },
    {
      name: 'deleting a queue nobody used',
      args: () => ['queue', 'delete', 'emials'],
      env: server,
      code: 5,
      stderr:
        /^sepp: queue emials does not exist: no job was ever enqueued to it; did you mean emails\? \(`sepp queues` lists the queues\)$/,
    },
    // Connecting: the mistake, named.
    {
      name: '--server without a port',
      args: () => ['queues', '--server', '127.0.0.1'],
      code: 2,
      stderr: /^sepp: --server 127\.0\.0\.1 has no port; write host:port, e\.g\. --server 127\.0\.0\.1:50051/,
    },
    {
      name: '--server as a URL',
      args: () => ['queues', '--server', `http://${t.address}`],
      code: 2,
      stderr:
        /^sepp: --server http:\/\/.*: give host:port without a scheme, e\.g\. --server 127\.0\.0\.1:\d+$/,
    },
    {
      name: '--server pointing at the admin port',
      args: () => ['queues', '--server', `127.0.0.1:${adminPort()}`],
      code: 3,
      stderr: /answered with HTTP\/1, not gRPC: that is an HTTP server \(the admin UI's port\?\)/,
    },
    {
      name: '--tls against a plaintext server',
      args: () => ['queues', '--tls'],
      process: true,
      env: server,
      code: 3,
      stderr: /^sepp: sepp at 127\.0\.0\.1:\d+ does not speak TLS; drop --tls and --ca/,
    },
    {
      name: 'plaintext against a TLS server',
      args: () => ['queues', '--server', tlsServer.address],
      process: true,
      code: 3,
      stderr: /^sepp: sepp at 127\.0\.0\.1:\d+ expects TLS; add --tls/,
    },
    {
      name: '--tls with a certificate the system does not trust',
      args: () => ['queues', '--server', tlsServer.address, '--tls'],
      process: true,
      code: 3,
      stderr:
        /^sepp: the TLS certificate of sepp at .* is not trusted \(self[- ]signed certificate\); give the CA/,
    },
    {
      name: 'nothing listening',
      args: () => ['queues', '--server', '127.0.0.1:1'],
      code: 3,
      stderr: /^sepp: cannot reach sepp at 127\.0\.0\.1:1: connection refused; is it running/,
    },
  ];

  for (const c of cases) {
    test(c.name, async () => {
      const args = c.args();
      const run = await runCli(args, {
        ...(c.process === true || args[0] === 'serve' ? { entry } : {}),
        env: c.env?.() ?? {},
        ...(c.cwd === undefined ? {} : { cwd: c.cwd() }),
        ...(c.input === undefined ? {} : { input: c.input }),
      });
      assertOneLine(run, c.name);
      assert.match(run.stderr.trim(), c.stderr);
      assert.equal(run.code, c.code, `exit code; stderr: ${run.stderr}`);
    });
  }

  // What used to fail and must now work, with nothing on stderr.
  const works: {
    name: string;
    args: () => string[];
    env?: () => Record<string, string>;
    input?: string;
    process?: true;
    stdout: RegExp;
  }[] = [
    {
      name: '--version with a TMPDIR that does not exist',
      args: () => ['--version'],
      env: () => ({ TMPDIR: join(work, 'no-such-tmp') }),
      process: true,
      stdout: /^sepp \d+\.\d+\.\d+ \(\S+\)\n$/,
    },
    {
      name: 'version --json',
      args: () => ['version', '--json'],
      // The schema versions this sepp migrates to: the last migration of each store.
      stdout: new RegExp(
        `^\\{"version":"\\d+\\.\\d+\\.\\d+","commit":"\\S+","schemaVersions":\\{"sqlite":${migrations.at(-1)!.version},"postgres":${postgresMigrations.at(-1)!.version}\\}\\}\\n$`,
      ),
    },
    {
      name: '--delay as an integer of milliseconds, as the message says',
      args: () => ['enqueue', 'later', 't', '--delay', '10000', '-o', 'json'],
      env: server,
      stdout: /"deduplicated": false/,
    },
    {
      name: '--file - reads the payload from standard input',
      args: () => ['enqueue', 'piped', 't', '--file', '-', '-o', 'json'],
      env: server,
      input: '{"from":"stdin"}',
      process: true,
      stdout: /"deduplicated": false/,
    },
    {
      name: 'a job id in upper case names the same job',
      args: () => ['job', jobId.toUpperCase(), '--json'],
      env: server,
      stdout: /"queue": "known"/,
    },
    {
      name: 'pause --create makes a queue on purpose (paused, before its first job)',
      args: () => ['pause', 'prepared', '--create', '--json'],
      env: server,
      stdout: /"paused": true/,
    },
    {
      name: 'an empty queue can be deleted',
      args: () => ['queue', 'delete', 'prepared'],
      env: server,
      stdout: /^deleted queue prepared\n$/,
    },
    {
      name: '--ca against a TLS server addressed by IP: no Node warning',
      args: () => ['queues', '--server', tlsServer.address, '--ca', caFile],
      process: true,
      stdout: /no queues yet/,
    },
  ];
  for (const w of works) {
    test(w.name, async () => {
      const run = await runCli(w.args(), {
        ...(w.process === true ? { entry } : {}),
        env: w.env?.() ?? {},
        ...(w.input === undefined ? {} : { input: w.input }),
      });
      assert.equal(run.timedOut, false, 'hung');
      assert.equal(run.stderr, '', 'nothing on stderr');
      assert.equal(run.code, 0);
      assert.match(run.stdout, w.stdout);
    });
  }
});
