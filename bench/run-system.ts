import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchOptions } from './args.ts';
import { freePort, waitForPort } from './lib/net.ts';
import { peakRssBytes } from './lib/proc-stats.ts';
import { spawnTracked } from './lib/processes.ts';
import { waitForQuiet } from './lib/quiet.ts';
import { fdatasyncMedianUs } from './report/machine.ts';
import type { SystemResult } from './report/results.ts';
import type { StartContext, SystemDriver } from './systems/types.ts';
import type { WorkloadContext, WorkloadRun } from './workloads/context.ts';
import { checkFsyncs, type FsyncCheck } from './workloads/fsync-check.ts';
import { runRoundTrips } from './workloads/latency-round.ts';
import { runThroughput } from './workloads/throughput.ts';

const log = (message: string) => process.stderr.write(`bench: ${message}\n`);

/** Sizes of the untimed strace runs: enough jobs to count, few enough that ptrace stays quick. */
function fsyncCheckSizes(opts: BenchOptions): { concurrency: number; jobs: number }[] {
  return [
    { concurrency: 1, jobs: opts.quick ? 100 : 300 },
    { concurrency: opts.concurrency, jobs: opts.quick ? 500 : 2000 },
  ];
}

/**
 * Starts one system in a fresh data directory under `runDir`, runs the chosen workloads
 * against it, stops it, and removes its data. A failure is recorded, not thrown, so the
 * other systems still run. Called once per system per repetition.
 */
export async function runSystem(
  driver: SystemDriver,
  opts: BenchOptions,
  runDir: string,
  repetition: number,
): Promise<SystemResult> {
  const dataDir = mkdtempSync(join(runDir, `${driver.id}-data-`));
  const startCtx: StartContext = {
    dataDir,
    freePort,
    spawn: (spec) => spawnTracked(spec, runDir),
    waitForPort,
    log,
  };
  let queueSeq = 0;
  const ctx: WorkloadContext = {
    driver,
    payload: Buffer.alloc(opts.payloadBytes, 'x'),
    phaseTimeoutMs: opts.phaseTimeoutS * 1000,
    queueName: (prefix) => `bench-${prefix}-${++queueSeq}`,
    beforePhase: async () => {
      if (opts.quietWaitS === 0) return;
      const load = await waitForQuiet(opts.quietWaitS * 1000, opts.quietBelowPercent);
      if (load > opts.quietBelowPercent)
        log(`machine still ${Math.round(load)}% busy after ${opts.quietWaitS} s; going on`);
    },
    log,
  };
  const runs: WorkloadRun[] = [];
  const fsyncChecks: FsyncCheck[] = [];
  let error: string | undefined;
  let peakRss = 0;
  let settings = '';
  const diskFdatasyncUs = fdatasyncMedianUs(dataDir);
  try {
    log(`${driver.id}: starting, repetition ${repetition + 1} (disk fdatasync median ${diskFdatasyncUs} µs)`);
    await driver.start(startCtx);
    settings = driver.describeSettings();
    log(`${driver.label}: ${settings}`);
    // Once per system is enough: the check is about configuration, not speed.
    if (opts.fsyncCheck && repetition === 0) {
      for (const size of fsyncCheckSizes(opts)) {
        const checks = await checkFsyncs(ctx, size.concurrency, size.jobs);
        fsyncChecks.push(...checks);
        log(
          `${driver.id}: fsync check c=${size.concurrency}: ${checks.map((c) => `${c.phase} ${c.perJob.toFixed(2)}/job`).join(', ')}`,
        );
      }
    }
    const record = (run: WorkloadRun) => {
      runs.push(run);
      const figures = run.phases.map(
        (p) =>
          `${p.phase} ${Math.round(p.jobsPerSec)} jobs/s${p.complete ? '' : ' (timed out)'} ` +
          `(other load ${Math.round(p.otherCpuPercent)}%)`,
      );
      log(`${driver.id}: ${run.workload} c=${run.concurrency}: ${figures.join(', ')}`);
    };
    if (opts.warmupJobs > 0) {
      // Untimed: a fresh process spends its first thousands of jobs compiling its hot code
      // (V8's optimiser on helper threads), which a long-running server has long done.
      const warm = await runThroughput(ctx, {
        jobs: opts.warmupJobs,
        concurrency: opts.concurrency,
        timeoutMs: ctx.phaseTimeoutMs,
      });
      log(
        `${driver.id}: warm-up of ${opts.warmupJobs} jobs: ${warm.map((p) => `${p.phase} ${Math.round(p.jobsPerSec)} jobs/s`).join(', ')} (not recorded)`,
      );
    }
    for (const workload of opts.workloads) {
      if (workload === 'W1') {
        const phases = await runThroughput(ctx, {
          jobs: opts.jobs,
          concurrency: opts.concurrency,
          timeoutMs: ctx.phaseTimeoutMs,
        });
        record({ workload, concurrency: opts.concurrency, repetition, phases });
      } else if (workload === 'W2') {
        const phase = await runRoundTrips(ctx, opts.w2Rounds, ctx.phaseTimeoutMs);
        record({ workload, concurrency: 1, repetition, phases: [phase] });
      } else if (workload === 'W3') {
        const phases = await runThroughput(ctx, {
          jobs: opts.jobs,
          concurrency: opts.w3Concurrency,
          batchSize: opts.batchSize,
          timeoutMs: ctx.phaseTimeoutMs,
        });
        record({ workload, concurrency: opts.w3Concurrency, repetition, phases });
      } else {
        for (const concurrency of opts.w4Levels) {
          const phases = await runThroughput(ctx, {
            jobs: opts.w4Jobs,
            concurrency,
            timeoutMs: opts.w4TimeoutS * 1000,
          });
          record({ workload, concurrency, repetition, phases });
        }
      }
    }
  } catch (err) {
    error = err instanceof Error ? err.message : String(err);
    log(`${driver.id} failed: ${err instanceof Error ? (err.stack ?? err.message) : error}`);
  } finally {
    peakRss = peakRssBytes(driver.serverPids());
    try {
      await driver.stop();
    } catch (err) {
      log(`${driver.id}: stop failed: ${err instanceof Error ? err.message : String(err)}`);
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
  return {
    id: driver.id,
    label: driver.label,
    durability: driver.durability,
    settings,
    batch: driver.batch,
    fsyncChecks,
    runs,
    serverLifetimePeakRssBytes: peakRss,
    diskFdatasyncMedianUs: [diskFdatasyncUs],
    errors: error === undefined ? [] : [error],
  };
}
