/**
 * Disaster recovery with the real Litestream binary (docs/replication.md): sepp
 * serves a W1-shaped load while `litestream replicate` streams its WAL to a
 * file replica; then the machine "dies" (sepp and Litestream both SIGKILLed),
 * the data directory is deleted, `litestream restore` brings the database
 * back from the replica, and sepp starts on it.
 *
 * What must hold: the restored database passes SQLite's integrity check, its
 * counters equal its rows, and it is a prefix of what was acknowledged. The
 * replica is a prefix of the commits (Litestream ships WAL frames in order), so
 * if the job sent at time P is in it, every operation acknowledged before P
 * committed before it and is in it too. Operations acknowledged after the last
 * replicated position may be missing: the test counts them and reports the
 * replication lag at the kill (the RPO).
 *
 * SEPP_LITESTREAM_CYCLES (default 1) and SEPP_LITESTREAM_LOAD_MS (default
 * 3000) make longer runs to measure the lag.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { SeppClient } from '../../clients/typescript/src/index.ts';
import { databaseFileName } from '../../src/store/sqlite/open.ts';
import { inspectDataDir } from '../helpers/inspect-data-dir.ts';
import {
  collectOutput,
  exited,
  fileReplicaConfig,
  litestreamBinary,
  litestreamSkip,
  litestreamVersion,
} from '../helpers/litestream.ts';
import { launchServerProcess, type ServerProcess } from '../helpers/process-server.ts';
import { SteadyLoad, waitFor } from '../helpers/steady-load.ts';

const cycles = Number(process.env.SEPP_LITESTREAM_CYCLES ?? 1);
const loadMs = Number(process.env.SEPP_LITESTREAM_LOAD_MS ?? 3000);

interface CycleResult {
  summary: string;
  rpoMs: number;
}

test('Litestream: kill -9 under load, delete the data directory, restore from the replica, serve again', {
  skip: litestreamSkip,
  timeout: 120_000 + cycles * (loadMs + 60_000),
}, async () => {
  const results: CycleResult[] = [];
  for (let cycle = 0; cycle < cycles; cycle++)
    results.push(await disasterCycle(litestreamBinary ?? '', cycle));
  const rpos = results.map((r) => r.rpoMs).sort((a, b) => a - b);
  console.log(
    [
      ...results.map((r) => r.summary),
      `replication lag at the kill (RPO) over ${cycles} cycles: median ${rpos[Math.floor(rpos.length / 2)]} ms, ` +
        `max ${rpos[rpos.length - 1]} ms (Litestream ${litestreamVersion()}, file replica, sync-interval 1s)`,
    ].join('\n'),
  );
});

async function disasterCycle(litestream: string, cycle: number): Promise<CycleResult> {
  const work = mkdtempSync(join(tmpdir(), 'sepp-litestream-'));
  const dataDir = join(work, 'data');
  const db = join(dataDir, databaseFileName);
  const replica = join(work, 'replica');
  const configFile = join(work, 'litestream.yml');
  writeFileSync(configFile, fileReplicaConfig(db, replica));
  const seppConfig = join(work, 'sepp.toml');
  writeFileSync(seppConfig, '[server]\nwal_checkpoints = "external"\n');
  let server: ServerProcess | undefined;
  let replicator: ChildProcess | undefined;
  let load: SteadyLoad | undefined;
  try {
    server = await launchServerProcess(dataDir, ['--config', seppConfig]).ready;
    replicator = spawn(litestream, ['replicate', '-config', configFile], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const replicatorLog = collectOutput(replicator);
    // Litestream's first snapshot of the database starts the replica.
    await waitFor(() => snapshots(replica).length > 0, `Litestream's first snapshot: ${replicatorLog()}`);

    load = new SteadyLoad({
      address: `127.0.0.1:${server.port}`,
      queue: 'w1',
      producers: 50,
      workers: 50,
      leaseMs: 30_000,
    });
    await sleep(loadMs);
    assert.deepEqual(load.errors, [], 'no call failed while Litestream replicated (no SQLITE_BUSY)');

    // The machine dies: both processes at once, with no chance to finish anything.
    const killedMs = performance.now();
    load.serverKilled();
    const replicatorExited = exited(replicator);
    replicator.kill('SIGKILL');
    await server.stop('SIGKILL');
    await replicatorExited;
    replicator = undefined;
    server = undefined;
    await load.stop();
    const generations = snapshots(replica).map((s) => s.generation);
    assert.equal(
      new Set(generations).size,
      1,
      `one generation: sepp never checkpointed behind Litestream's back\n${replicatorLog()}`,
    );
    assert.doesNotMatch(
      replicatorLog(),
      /sync error|new generation.*reason="(?!no generation exists)/i,
      replicatorLog(),
    );

    // A new machine: no data directory, only the replica.
    rmSync(dataDir, { recursive: true, force: true });
    // As the systemd drop-in's ExecStartPre does it (packaging/sepp.service.d/litestream.conf).
    const restore = spawnSync(
      litestream,
      ['restore', '-config', configFile, '-if-db-not-exists', '-if-replica-exists', db],
      { encoding: 'utf8' },
    );
    assert.equal(restore.status, 0, `litestream restore: ${restore.stderr}`);

    const restored = inspectDataDir(dataDir);
    if (cycle === 0) checkOtherCommands(litestream, configFile, db, work);
    assert.equal(restored.integrity, 'ok');
    assert.deepEqual(restored.counterMismatches, []);
    const check = checkPrefix(load, restored.rows);
    assert.deepEqual(
      check.problems.slice(0, 20),
      [],
      `${check.problems.length} acknowledged operations before the last replicated position are missing`,
    );
    assert.ok(check.before > 0, 'some acknowledged operations were replicated before the kill');

    // sepp serves the restored database: every job in it can be leased and acked.
    server = await launchServerProcess(dataDir, ['--config', seppConfig]).ready;
    const client = SeppClient.connect(`127.0.0.1:${server.port}`);
    try {
      const [queue] = await client.listQueues();
      const rows = restored.states;
      assert.equal(queue?.counts.ready, rows.ready ?? 0);
      assert.equal(queue?.counts.leased, rows.leased ?? 0);
      const [leased] = await client.reserve({ queues: ['w1'], leaseMs: 60_000 });
      if (leased !== undefined) await client.ack(leased);
    } finally {
      await client.close();
    }
    const rpoMs = Math.round(killedMs - check.positionMs);
    return {
      rpoMs,
      summary:
        `cycle ${cycle}: ${load.enqueues.length} enqueues and ${load.acks.length} acks acknowledged in ${loadMs} ms; ` +
        `restored ${restored.rows.size} jobs ${JSON.stringify(restored.states)}, integrity ok, counters = rows; ` +
        `last replicated position ${rpoMs} ms before the kill; ${check.before} operations acknowledged before it, all there; ` +
        `after it ${check.after} acknowledged, of which missing: ${check.lostEnqueues} enqueues, ${check.lostAcks} acks (those jobs come back to be done again)`,
    };
  } finally {
    load?.serverKilled();
    replicator?.kill('SIGKILL');
    await server?.stop('SIGKILL');
    await load?.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

/** The other commands docs/replication.md shows: generations, restore -o, and sqlite3's integrity check. */
function checkOtherCommands(litestream: string, configFile: string, db: string, work: string): void {
  const generations = spawnSync(litestream, ['generations', '-config', configFile, db], { encoding: 'utf8' });
  assert.equal(generations.status, 0, generations.stderr);
  assert.match(generations.stdout, /^name\s+generation\s+lag\s+start\s+end\n\S+\s+[0-9a-f]{16}\s/);
  const copy = join(work, 'copy.db');
  const restore = spawnSync(litestream, ['restore', '-o', copy, '-config', configFile, db], {
    encoding: 'utf8',
  });
  assert.equal(restore.status, 0, restore.stderr);
  const sqlite3 = spawnSync('sqlite3', ['-readonly', copy, 'PRAGMA integrity_check'], { encoding: 'utf8' });
  if (sqlite3.error === undefined) assert.equal(sqlite3.stdout, 'ok\n', sqlite3.stderr);
}

/** Litestream's snapshots in a file replica: generations/<generation>/snapshots/<index>.snapshot.lz4. */
function snapshots(replica: string): Array<{ generation: string; file: string }> {
  const generationsDir = join(replica, 'generations');
  if (!existsSync(generationsDir)) return [];
  return readdirSync(generationsDir).flatMap((generation) => {
    const dir = join(generationsDir, generation, 'snapshots');
    return existsSync(dir) ? readdirSync(dir).map((file) => ({ generation, file })) : [];
  });
}

interface PrefixCheck {
  /** The send time of the newest enqueue found in the restored rows: everything acknowledged before it committed before it. */
  positionMs: number;
  /** Operations acknowledged before the position (each must be there). */
  before: number;
  /** Operations acknowledged after it (each may be missing). */
  after: number;
  lostEnqueues: number;
  lostAcks: number;
  problems: string[];
}

function checkPrefix(load: SteadyLoad, rows: ReadonlyMap<string, { state: string }>): PrefixCheck {
  let positionMs = Number.NEGATIVE_INFINITY;
  for (const e of load.enqueues) if (rows.has(e.jobId)) positionMs = Math.max(positionMs, e.sentMs);
  const result: PrefixCheck = { positionMs, before: 0, after: 0, lostEnqueues: 0, lostAcks: 0, problems: [] };
  for (const e of load.enqueues) {
    // An acked job's row is gone; the acks below check those.
    const present = rows.has(e.jobId) || load.ackSent.has(e.jobId);
    if (e.acknowledgedMs < positionMs) {
      result.before++;
      if (!present)
        result.problems.push(`enqueue of ${e.jobId}, acknowledged before the position, is missing`);
    } else {
      result.after++;
      if (!present) result.lostEnqueues++;
    }
  }
  for (const a of load.acks) {
    const undone = rows.has(a.jobId);
    if (a.acknowledgedMs < positionMs) {
      result.before++;
      if (undone) result.problems.push(`ack of ${a.jobId}, acknowledged before the position, is missing`);
    } else {
      result.after++;
      if (undone) result.lostAcks++;
    }
  }
  return result;
}
