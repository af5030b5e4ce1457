/**
 * Schedules under a crash loop: the real server runs as a child process with
 * schedules that tick every second (a 6-field cron expression, and a 1 s
 * interval), and is killed with SIGKILL at random moments, again and again
 * (every third start while it starts), then restarted on the same data
 * directory. Ticks missed while it is down are caught up when it comes back
 * (misfire = catch_up), so in the end every tick time from the schedule's
 * creation to its last handled tick must have exactly one job: none lost (the
 * cursor never moved past a tick whose job was not committed with it) and none
 * doubled (a committed tick is never handled again).
 *
 * After every kill, with the server down, the database passes the integrity
 * check and the counters match the rows. Real time (processes are killed),
 * bounded: SEPP_CRASH_CYCLES (default 6; `npm run test:long` runs 50) cycles.
 * SEPP_CRASH_SEED replays the kill timings (as far as the timing of real
 * processes lets it).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { inspectDataDir } from '../helpers/inspect-data-dir.ts';
import { intsFrom, mulberry32, seedFromEnv } from '../helpers/prng.ts';
import { bundleServer, type LaunchedServer, launchServerProcess } from '../helpers/process-server.ts';

// Six kills (two while starting) put a kill before, during and after a start's catch-up and
// between ticks; each cycle is a second or two of real time, so more belong in the long run
// (npm run test:long: 50), not in every `npm test`.
const cycles = Number(process.env.SEPP_CRASH_CYCLES ?? 6);
const seed = seedFromEnv('SEPP_CRASH_SEED');
const schedules = ['every-second-cron', 'every-second-interval'];

const config = `
[[schedules]]
name = "every-second-cron"
cron = "* * * * * *"
queue = "ticks"
type = "cron"
misfire = "catch_up"
catch_up_max = 1000

[[schedules]]
name = "every-second-interval"
interval_ms = "1s"
queue = "ticks"
type = "interval"
misfire = "catch_up"
catch_up_max = 1000
`;

interface TickFigures {
  expected: number;
  found: number;
  lost: number[];
  doubled: number[];
  outside: number[];
}

/** Every tick time of `name` from its creation to its last handled tick, against the jobs with its keys. */
function tickFigures(db: Database.Database, name: string): TickFigures {
  const row = db
    .prepare<
      [string],
      { created_at_ms: number; anchor_ms: number; interval_ms: number | null; last_tick_ms: number | null }
    >('SELECT created_at_ms, anchor_ms, interval_ms, last_tick_ms FROM schedules WHERE name = ?')
    .get(name);
  assert.ok(row !== undefined && row.last_tick_ms !== null, `${name} is stored and has ticked`);
  // A cron tick falls on every whole second after creation; an interval tick on anchor + k × 1 s.
  const firstMs =
    row.interval_ms === null ? Math.floor(row.created_at_ms / 1000) * 1000 + 1000 : row.anchor_ms + 1000;
  const expected: number[] = [];
  for (let t = firstMs; t <= row.last_tick_ms; t += 1000) expected.push(t);
  const perTick = new Map<number, number>();
  const keys = db
    .prepare<[string], string>("SELECT idempotency_key FROM jobs WHERE idempotency_key LIKE ? || ':%'")
    .pluck()
    .all(`schedule:${name}`);
  for (const key of keys) {
    const tick = Date.parse(key.slice(`schedule:${name}:`.length));
    perTick.set(tick, (perTick.get(tick) ?? 0) + 1);
  }
  const expectedSet = new Set(expected);
  return {
    expected: expected.length,
    found: [...perTick.keys()].filter((t) => expectedSet.has(t)).length,
    lost: expected.filter((t) => !perTick.has(t)),
    doubled: [...perTick].filter(([, n]) => n > 1).map(([t]) => t),
    outside: [...perTick.keys()].filter((t) => !expectedSet.has(t)),
  };
}

test(`schedules under ${cycles} kill -9s of the server: every tick time has exactly one job`, {
  timeout: 60_000 + cycles * 20_000,
}, async () => {
  assert.ok(cycles >= 1);
  const startedMs = performance.now();
  const workDir = mkdtempSync(join(tmpdir(), 'sepp-schedule-crash-'));
  const dataDir = join(workDir, 'data');
  const configFile = join(workDir, 'sepp.toml');
  writeFileSync(configFile, config);
  const int = intsFrom(mulberry32(seed));
  const log: string[] = [`schedule crash loop: seed ${seed} (SEPP_CRASH_SEED), ${cycles} cycles`];
  let server: LaunchedServer | undefined;
  let bundle: ReturnType<typeof bundleServer> | undefined;
  let killsWhileStarting = 0;
  try {
    bundle = bundleServer();
    const launch = () =>
      launchServerProcess(dataDir, ['--config', configFile], { bundle: bundle?.bundle ?? '' });
    for (let cycle = 0; cycle < cycles; cycle++) {
      server = launch();
      let what: string;
      if (cycle % 3 === 2) {
        await sleep(int(0, 1200));
        const listening = server.isReady();
        await server.stop('SIGKILL');
        if (!listening) killsWhileStarting++;
        what = listening ? 'killed just after it started listening' : 'killed while starting';
      } else {
        await server.ready;
        // Up to 1.5 s: most lives see a tick of their own besides catching up the missed ones.
        const killAfterMs = int(300, 1500);
        await sleep(killAfterMs);
        await server.stop('SIGKILL');
        what = `killed ${killAfterMs} ms after it listened`;
      }
      server = undefined;
      const snapshot = inspectDataDir(dataDir);
      assert.equal(snapshot.integrity, 'ok', `after cycle ${cycle}: integrity check`);
      assert.deepEqual(snapshot.counterMismatches, [], `after cycle ${cycle}: counters against rows`);
      log.push(`cycle ${cycle}: ${what}; ${snapshot.rows.size} jobs stored`);
      // Down for a moment: with the next start's own time, it has ticks to catch up.
      await sleep(int(0, 1000));
    }
    // The last start: catch up, run a little, stop cleanly.
    server = launch();
    await server.ready;
    await sleep(1500);
    assert.equal(await server.stop('SIGTERM'), 0, 'a clean stop at the end');
    server = undefined;

    const db = new Database(join(dataDir, 'sepp.db'), { readonly: true, fileMustExist: true });
    try {
      for (const name of schedules) {
        const figures = tickFigures(db, name);
        log.push(
          `${name}: ticks expected ${figures.expected}, found ${figures.found}, ` +
            `lost ${figures.lost.length}, doubled ${figures.doubled.length}, outside the run ${figures.outside.length}`,
        );
        assert.deepEqual(
          figures.lost.slice(0, 10).map((t) => new Date(t).toISOString()),
          [],
          `${name}: lost ticks`,
        );
        assert.deepEqual(
          figures.doubled.slice(0, 10).map((t) => new Date(t).toISOString()),
          [],
          `${name}: doubled`,
        );
        assert.deepEqual(
          figures.outside.slice(0, 10).map((t) => new Date(t).toISOString()),
          [],
          `${name}: outside`,
        );
        assert.equal(figures.found, figures.expected);
        assert.ok(figures.expected >= cycles, `${name} ticked through the run (${figures.expected} ticks)`);
      }
    } finally {
      db.close();
    }
    log.push(
      `${cycles} cycles (${killsWhileStarting} killed while starting), ${((performance.now() - startedMs) / 1000).toFixed(1)} s`,
    );
  } finally {
    console.log(log.join('\n'));
    await server?.stop('SIGKILL');
    bundle?.dispose();
    rmSync(workDir, { recursive: true, force: true });
  }
});
