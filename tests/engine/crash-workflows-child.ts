/**
 * The process crash-workflows.test.ts kills. One producer enqueues fan-in flows (a root,
 * four parts waiting on it, a final job waiting on the parts), every job with an
 * idempotency key of its flow, and every tenth flow a sealed batch of five members with
 * an on_complete job; two workers lease and ack everything (a member in ten is
 * dead-lettered instead). It records in its ledger file, one line each, only after the
 * engine's promise resolved (so once durable):
 *
 *   F <flow> <finalId> <rootId>   a flow was enqueued (or found again by its keys)
 *   B <batch> <batchId>           a batch was created and sealed
 *   A <jobId>                     an ack was acknowledged
 *   V <jobId> <detail>            a final job was leased while a part had not completed
 *
 * Written with writeSync, so a written line survives the SIGKILL. Stdout says `ready`
 * once the engine is open.
 *
 * Usage: crash-workflows-child.ts DATA_DIR LEDGER_FILE SEED FLOW_START BATCH_START
 */
import { openSync, writeSync } from 'node:fs';
import { systemClock } from '../../src/engine/clock.ts';
import { Engine } from '../../src/engine/engine.ts';
import { defaultEngineOptions } from '../../src/engine/settings.ts';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { intsFrom, mulberry32 } from '../helpers/prng.ts';
import {
  batchRequest,
  flowJobs,
  totalBatches,
  totalFlows,
  workflowQueueSettings,
  workflowQueues,
} from './crash-workflows-shape.ts';

const [dataDir, ledgerFile, seedArg, flowStartArg, batchStartArg] = process.argv.slice(2);
if (dataDir === undefined || ledgerFile === undefined) {
  throw new Error('usage: crash-workflows-child.ts DATA_DIR LEDGER_FILE SEED FLOW_START BATCH_START');
}
const ledger = openSync(ledgerFile, 'a');
const int = intsFrom(mulberry32(Number(seedArg ?? 1)));
const report = (line: string) => writeSync(ledger, `${line}\n`);

const store = openSqliteStore(dataDir, { durability: 'full' });
const engine = await Engine.open(
  store,
  { ...defaultEngineOptions(), queues: workflowQueueSettings },
  { clock: systemClock },
);
process.stdout.write('ready\n');
// Never ends by itself before the test kills it; a forgotten child still goes away.
setTimeout(() => process.exit(0), 60_000);

async function producer(): Promise<void> {
  let flow = Number(flowStartArg ?? 0);
  let batch = Number(batchStartArg ?? 0);
  while (flow < totalFlows || batch < totalBatches) {
    if (batch < totalBatches && batch * 10 <= flow) {
      const { batch: created } = await engine.createBatch(batchRequest(batch));
      report(`B ${batch} ${created.id}`);
      batch++;
      continue;
    }
    const result = await engine.enqueueFlow(flowJobs(flow));
    if (!result.committed) throw new Error(`flow ${flow} refused: ${JSON.stringify(result.rejections)}`);
    const ids = Object.fromEntries(result.jobs.map((j) => [j.name, j.jobId]));
    report(`F ${flow} ${ids.final} ${ids.root}`);
    flow++;
  }
}

async function worker(name: string): Promise<void> {
  for (;;) {
    const jobs = await engine.reserve({ queues: workflowQueues, maxJobs: 50, waitMs: 200, workerId: name });
    const acks: { jobId: string; attempt: number }[] = [];
    for (const job of jobs) {
      if (job.queue === 'wf-final') {
        const parts = job.dependencyResults ?? [];
        const early = parts.filter((p) => p.state !== 'completed');
        if (parts.length !== 4 || early.length > 0) {
          report(`V ${job.id} ${parts.length} parts, not completed: ${early.map((p) => p.state).join(',')}`);
        }
      }
      if (job.queue === 'wf-m' && int(0, 9) === 0) {
        await engine.nack({
          jobId: job.id,
          attempt: job.attempt,
          error: 'bad row',
          directive: { kind: 'dead_letter' },
        });
        continue;
      }
      acks.push({ jobId: job.id, attempt: job.attempt });
    }
    if (acks.length === 0) continue;
    const outcomes = await engine.ackBatch(acks);
    outcomes.forEach((outcome, i) => {
      if (outcome.ok) report(`A ${acks[i]!.jobId}`);
    });
  }
}

void Promise.all([producer(), worker('w1'), worker('w2')]);
