/**
 * packaging/sepp.service.d/litestream.conf: the drop-in that runs sepp under
 * `litestream replicate -exec`. Its text agrees with sepp.service (the same
 * sepp command line, data directory and database), systemd accepts the unit
 * with it, and its commands do what docs/replication.md says when run as
 * systemd would run them (paths moved into a temporary directory, the real
 * Litestream binary, sepp from the sources): the restore does nothing on a
 * first start or when a database exists and restores a missing one; SIGTERM
 * to Litestream alone (KillMode=mixed) stops sepp gracefully, once, and the
 * last sync leaves nothing acknowledged behind. Readiness (Type=notify) still
 * works with Litestream as the service's main process: it passes NOTIFY_SOCKET
 * on, sepp's READY=1 reaches systemd (NotifyAccess=all accepts it from a process
 * that is not the main one) and claims no MAINPID, so systemd keeps signalling
 * Litestream.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { SeppClient } from '../../clients/typescript/src/index.ts';
import { openDataDir } from '../../src/store/sqlite/open.ts';
import { cliEntry } from '../helpers/cli.ts';
import { inspectDataDir } from '../helpers/inspect-data-dir.ts';
import {
  collectOutput,
  exited,
  fileReplicaConfig,
  litestreamBinary,
  litestreamSkip,
} from '../helpers/litestream.ts';
import { waitFor } from '../helpers/steady-load.ts';
import { notifySkip, standInForSystemd } from '../helpers/systemd-stand-in.ts';
import { allowedSyscalls, commandExists, tracedSyscalls } from './syscalls.ts';
import { readUnitDirectives, unitPath } from './unit-file.ts';

const root = new URL('../..', import.meta.url).pathname;
const dropInPath = join(root, 'packaging', 'sepp.service.d', 'litestream.conf');
const dropIn = readUnitDirectives(readFileSync(dropInPath, 'utf8'));
const unit = readUnitDirectives();
const one = (directives: Map<string, string[]>, key: string) => directives.get(key)?.at(-1) ?? '';

/** Splits a systemd command line into words: spaces separate, double quotes group. */
function words(line: string): string[] {
  return [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? '');
}

test("the drop-in runs sepp.service's own command under litestream replicate -exec", () => {
  const serve = one(unit, 'ExecStart');
  const dataDir = words(serve)[words(serve).indexOf('--data-dir') + 1];
  assert.equal(dataDir, '/var/lib/sepp');
  assert.deepEqual(dropIn.get('ExecStart'), [
    '',
    `/usr/local/bin/litestream replicate -config /etc/sepp/litestream.yml -exec "${serve}"`,
  ]);
  assert.equal(
    one(dropIn, 'ExecStartPre'),
    `/usr/local/bin/litestream restore -config /etc/sepp/litestream.yml -if-db-not-exists -if-replica-exists ${dataDir}/sepp.db`,
  );
  assert.equal(one(dropIn, 'Environment'), 'SEPP_WAL_CHECKPOINTS=external');
  assert.equal(one(dropIn, 'KillMode'), 'mixed');
  // Litestream is the main process, so sepp's READY=1 comes from a child of it (and
  // systemd-notify from a child of sepp): only NotifyAccess=all lets it count.
  assert.equal(one(unit, 'Type'), 'notify');
  assert.equal(one(dropIn, 'NotifyAccess') || one(unit, 'NotifyAccess'), 'all');
  assert.equal(one(dropIn, 'Type'), '', "the drop-in keeps the unit's Type=notify");
});

const verifySkip = commandExists('systemd-analyze') ? false : 'systemd-analyze is not installed';
test('systemd-analyze verify accepts the unit with the drop-in', { skip: verifySkip }, (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-unit-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const standIn = join(dir, 'stand-in');
  copyFileSync('/bin/true', standIn);
  const standInFor = (text: string) =>
    text.replaceAll(/\/usr\/local\/bin\/(sepp|litestream) /g, `${standIn} `);
  writeFileSync(join(dir, 'sepp.service'), standInFor(readFileSync(unitPath, 'utf8')));
  mkdirSync(join(dir, 'sepp.service.d'));
  writeFileSync(join(dir, 'sepp.service.d', 'litestream.conf'), standInFor(readFileSync(dropInPath, 'utf8')));
  const verify = (env: NodeJS.ProcessEnv) =>
    spawnSync('systemd-analyze', ['verify', '--man=no', join(dir, 'sepp.service')], {
      encoding: 'utf8',
      env,
    });
  const run = verify(process.env);
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stderr, '', 'systemd-analyze verify warns');
  // verify reads drop-ins from the unit's directory: its debug dump shows it read this one.
  const debug = verify({ ...process.env, SYSTEMD_LOG_LEVEL: 'debug' });
  assert.match(`${debug.stdout}${debug.stderr}`, /DropIn Path: .*sepp\.service\.d\/litestream\.conf/);
});

test("the drop-in's commands: restore only when needed, ready once serving, SIGTERM stops both cleanly, nothing acknowledged is lost", {
  skip: litestreamSkip || notifySkip,
  timeout: 180_000,
}, async () => {
  const work = mkdtempSync(join(tmpdir(), 'sepp-dropin-'));
  const dataDir = join(work, 'var-lib-sepp');
  const db = join(dataDir, 'sepp.db');
  const files: Record<string, string> = {
    '/usr/local/bin/litestream': litestreamBinary ?? '',
    '/usr/local/bin/sepp': [process.execPath, ...cliEntry()].join(' '),
    '/etc/sepp/litestream.yml': join(work, 'litestream.yml'),
    '/etc/sepp/sepp.toml': join(work, 'sepp.toml'),
    '/var/lib/sepp': dataDir,
  };
  const moved = (line: string) =>
    Object.entries(files).reduce((text, [from, to]) => text.replaceAll(from, to), line);
  writeFileSync(files['/etc/sepp/litestream.yml'] ?? '', fileReplicaConfig(db, join(work, 'replica')));
  writeFileSync(
    files['/etc/sepp/sepp.toml'] ?? '',
    '[server]\ngrpc_listen = "127.0.0.1:0"\nadmin_listen = "127.0.0.1:0"\nlog_format = "json"\n',
  );
  const [name, value] = one(dropIn, 'Environment').split('=');
  // Type=notify: systemd gives every command of the unit its NOTIFY_SOCKET.
  const notifySocket = join(work, 'notify.sock');
  const systemd = standInForSystemd(notifySocket);
  const env = { ...process.env, SEPP_CONFIG: '', NOTIFY_SOCKET: notifySocket, [name ?? '']: value ?? '' };
  const execStartPre = () => {
    const [command, ...args] = words(moved(one(dropIn, 'ExecStartPre')));
    const run = spawnSync(command ?? '', args, { encoding: 'utf8', env });
    assert.equal(run.status, 0, run.stderr);
  };
  try {
    await systemd.next(/^LISTENING$/);
    mkdirSync(dataDir, { mode: 0o700 }); // StateDirectory=
    execStartPre(); // first start: no replica yet, nothing to restore
    assert.equal(existsSync(db), false);

    const [command, ...args] = words(moved(one(dropIn, 'ExecStart')));
    const main = spawn(command ?? '', args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const output = collectOutput(main);
    const stopped = exited(main);
    let port = 0;
    await waitFor(() => {
      const line = output()
        .split('\n')
        .find((l) => l.includes('"server.started"'));
      if (line !== undefined) port = Number((JSON.parse(line) as { grpc: string }).grpc.split(':').pop());
      return port > 0 || main.exitCode !== null;
    }, 'sepp to start under Litestream');
    assert.ok(port > 0, output());
    // Ready reaches systemd through Litestream, and names no other main process.
    assert.match(await systemd.next(/READY=1/), /^READY=1\nSTATUS=serving gRPC on 127\.0\.0\.1:\d+$/);
    assert.doesNotMatch(systemd.messages.join('\n'), /MAINPID=/);
    assert.doesNotMatch(output(), /systemd\.notify_failed/);
    const client = SeppClient.connect(`127.0.0.1:${port}`);
    const enqueued: string[] = [];
    const acked: string[] = [];
    try {
      for (let i = 0; i < 200; i++) enqueued.push((await client.enqueue('mail', 'send', `job ${i}`)).id);
      for (const job of await client.reserve({ queues: ['mail'], maxJobs: 50 })) {
        await client.ack(job);
        acked.push(job.id);
      }
    } finally {
      await client.close();
    }
    // Litestream takes up a database that did not exist when it started (a first start) at its
    // next sync, up to sync-interval (1 s) later; a stop before that leaves no replica at all
    // (docs/replication.md says so). Stop once it has: this run proves the clean stop's last sync.
    await waitFor(() => /msg="snapshot written"/.test(output()), 'Litestream to take up the new database');
    // KillMode=mixed: systemd signals the main process alone.
    main.kill('SIGTERM');
    await stopped;
    // Litestream 0.3.13 exits 1 after two known faults of its own at a stop: its last sync
    // wants to checkpoint with a context it has already cancelled (fixed upstream after
    // 0.3.13); or that sync meets the periodic one and both write the same WAL segment's
    // temporary file, the loser finding it renamed away (`client write: stat ….wal.lz4.tmp:
    // no such file or directory`, benbjohnson/litestream#503; seen 2026-12-06 on a quiet
    // machine, the stop 1 s after the snapshot: at the next sync tick). The WAL still
    // reaches the replica; the restore below checks that nothing is missing.
    const knownCloseBug =
      /error closing db.*(release read lock: context canceled|client write: stat .*\.wal\.lz4\.tmp: no such file or directory)/;
    assert.ok(main.exitCode === 0 || (main.exitCode === 1 && knownCloseBug.test(output())), output());
    assert.equal(output().match(/"server\.signal"/g)?.length, 1, 'sepp got one SIGTERM');
    assert.match(output(), /"server\.stopped"/);
    assert.doesNotMatch(output(), /forced_exit|sync error/);
    assert.equal(await systemd.next(/STOPPING=1/), 'STOPPING=1');
    assert.deepEqual(
      systemd.messages
        .filter((m) => m !== 'LISTENING' && m !== 'BARRIER=1') // systemd-notify's own wait
        .map((m) => m.split('\n')[0]),
      ['READY=1', 'STOPPING=1'],
      'the restore sends nothing; sepp sends ready once and stopping once',
    );
    console.log(`litestream replicate -exec: exit code ${main.exitCode} after SIGTERM`);

    // Started again with its database in place: the restore leaves it alone.
    const before = statSync(db);
    execStartPre();
    assert.equal(statSync(db).mtimeMs, before.mtimeMs);

    // A new machine: the restore brings back everything acknowledged before the stop.
    rmSync(dataDir, { recursive: true, force: true });
    mkdirSync(dataDir, { mode: 0o700 });
    execStartPre();
    const restored = inspectDataDir(dataDir);
    assert.equal(restored.integrity, 'ok');
    assert.deepEqual(restored.counterMismatches, []);
    assert.deepEqual(
      [...restored.rows.keys()].sort(),
      enqueued.filter((id) => !acked.includes(id)).sort(),
      'after a clean stop the replica holds every acknowledged operation',
    );
  } finally {
    systemd.child.kill();
    rmSync(work, { recursive: true, force: true });
  }
});

const traceSkip = litestreamSkip || (commandExists('strace') ? false : 'strace is not installed');
test('every system call Litestream makes is allowed by the unit, but the chowns it ignores', {
  skip: traceSkip,
  timeout: 60_000,
}, () => {
  // As root the trace runs as `nobody` (tracedSyscalls), which must reach every file.
  const work = mkdtempSync(join(tmpdir(), 'sepp-litestream-trace-'));
  try {
    chmodSync(work, 0o777);
    const dataDir = join(work, 'data');
    mkdirSync(dataDir, { mode: 0o777 });
    chmodSync(dataDir, 0o777);
    const db = join(dataDir, 'sepp.db');
    const config = join(work, 'litestream.yml');
    writeFileSync(config, fileReplicaConfig(db, join(work, 'replica')));
    const seed = openDataDir(dataDir, { durability: 'full' });
    seed.close();
    for (const name of readdirSync(dataDir)) chmodSync(join(dataDir, name), 0o666);
    const allowed = allowedSyscalls(unit.get('SystemCallFilter') ?? []);
    // Litestream gives the files it creates the database's owner; under the unit that
    // fails with EPERM (SystemCallErrorNumber=), which it ignores: it runs as that owner.
    const ignored = new Set(['fchown', 'fchownat', 'chown', 'lchown']);
    const denied = (calls: Set<string>) =>
      [...calls].filter((c) => !allowed.has(c) && !ignored.has(c)).sort();
    // replicate until timeout(1) stops it with SIGTERM, as systemd would.
    const replicate = tracedSyscalls(
      'timeout',
      ['-s', 'TERM', '3', litestreamBinary ?? '', 'replicate', '-config', config],
      {
        cwd: work,
        traceFile: join(work, 'replicate.txt'),
      },
    );
    assert.match(replicate.output, /litestream shut down/, replicate.output);
    assert.ok(replicate.syscalls.size > 20, `strace recorded only ${[...replicate.syscalls].join(', ')}`);
    assert.deepEqual(denied(replicate.syscalls), [], replicate.output);
    rmSync(db);
    const restore = tracedSyscalls(
      litestreamBinary ?? '',
      ['restore', '-config', config, '-if-db-not-exists', '-if-replica-exists', db],
      { cwd: work, traceFile: join(work, 'restore.txt') },
    );
    assert.equal(restore.status, 0, restore.output);
    assert.ok(existsSync(db), restore.output);
    assert.deepEqual(denied(restore.syscalls), [], restore.output);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});
