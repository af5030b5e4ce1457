/**
 * The workflows model (issue 33), shared by the stores' model tests
 * (tests/engine/workflows-model.test.ts on SQLite, workflows-model-postgres.test.ts):
 * random steps — jobs that depend on random earlier jobs under a random failure policy,
 * completions, dead letters, cancels, requeues from the dead letters, dead letters deleted
 * (what still waits on one is cancelled), sealed batches with
 * an on_complete and an on_death job — run against the engine and a small reference model
 * side by side. After every step each job's state agrees with the model, each batch's state
 * and its completion jobs (on_complete once ended, none before; on_death once its first
 * member died, naming that member, none before) agree; every 50 steps the per-queue
 * counters match the rows. With `ackBatches`, completions are AckBatch calls of up to 8
 * jobs, half of them among acks of unknown jobs (10 acks at least: the multi-row path, whose
 * jobs others wait on are released together; the other half takes it from 2 acks, as a server
 * that has had a waiting job does), on an engine that keeps no completed job.
 */
import assert from 'node:assert/strict';
import type { Engine } from '../../src/engine/engine.ts';
import type { DependencyPolicy, JobState } from '../../src/engine/types.ts';
import { bytes } from './engine.ts';
import { intsFrom, mulberry32 } from './prng.ts';

const policies: readonly DependencyPolicy[] = ['cancel', 'run', 'wait'];

/** What a model test reads of the stored rows after each step (the store's own tables). */
export interface WorkflowRows {
  /** The state of every job but the completion jobs (queue `callbacks`). */
  jobStates(): Promise<Map<string, string>>;
  /** The payloads of the completion jobs (queue `callbacks`). */
  completionPayloads(): Promise<Uint8Array[]>;
  /** A batch's stored state. */
  batchState(id: string): Promise<string | undefined>;
}

interface ModelJob {
  id: string;
  queue: string;
  state: JobState;
  policy: DependencyPolicy;
  /** parent id → edge state. */
  edges: Map<string, 'pending' | 'completed' | 'failed'>;
  batch: ModelBatch | null;
  /** How the job first ended, for its batch (a member counts once). */
  counted: boolean;
}

interface ModelBatch {
  id: string;
  members: ModelJob[];
  ended: boolean;
  /** The member counted dead first. */
  firstDead: string | null;
}

/** The reference: what a job's end does to the jobs waiting on it and to its batch. */
class Model {
  readonly jobs: ModelJob[] = [];
  readonly batches: ModelBatch[] = [];

  children(parentId: string): ModelJob[] {
    return this.jobs.filter((j) => j.state === 'waiting' && j.edges.get(parentId) === 'pending');
  }

  end(job: ModelJob, outcome: 'completed' | 'dead' | 'cancelled'): void {
    job.state = outcome;
    if (job.batch !== null && !job.counted) {
      job.counted = true;
      const batch = job.batch;
      if (outcome === 'dead' && batch.firstDead === null) batch.firstDead = job.id;
      if (!batch.ended && batch.members.every((m) => m.counted)) batch.ended = true;
    }
    for (const child of this.children(job.id)) {
      if (child.state !== 'waiting') continue; // cancelled by an earlier step of this cascade
      if (outcome === 'completed') child.edges.set(job.id, 'completed');
      else if (child.policy === 'cancel') {
        this.end(child, 'cancelled');
        continue;
      } else if (child.policy === 'run') child.edges.set(job.id, 'failed');
      if (![...child.edges.values()].includes('pending')) child.state = 'ready';
    }
  }

  /** A dead job deleted: the jobs still waiting on it are cancelled, whatever their policy. */
  delete(job: ModelJob): void {
    this.jobs.splice(this.jobs.indexOf(job), 1);
    for (const child of this.children(job.id)) {
      if (child.state === 'waiting') this.end(child, 'cancelled');
    }
  }
}

async function leaseOne(engine: Engine, job: ModelJob) {
  const leased = await engine.reserve({ queues: [job.queue], maxJobs: 10, leaseMs: 60_000 });
  assert.deepEqual(
    leased.map((l) => l.id),
    [job.id],
  );
  return leased[0]!;
}

async function check(rows: WorkflowRows, model: Model, step: string, ackBatches: boolean): Promise<void> {
  const states = await rows.jobStates();
  for (const job of model.jobs) {
    // Without retention, a completed job is kept only while others wait on it.
    if (ackBatches && job.state === 'completed' && !states.has(job.id)) continue;
    assert.equal(states.get(job.id), job.state, `${step}: job ${job.id} (${job.policy})`);
  }
  const completions = new Map<string, number>();
  const deaths = new Map<string, string[]>();
  for (const payload of await rows.completionPayloads()) {
    const { batch } = JSON.parse(new TextDecoder().decode(payload)) as {
      batch: { id: string; outcome: string; firstDead?: { jobId: string } };
    };
    if (batch.outcome === 'death')
      deaths.set(batch.id, [...(deaths.get(batch.id) ?? []), batch.firstDead!.jobId]);
    else completions.set(batch.id, (completions.get(batch.id) ?? 0) + 1);
  }
  for (const batch of model.batches) {
    assert.equal(
      await rows.batchState(batch.id),
      batch.ended ? 'ended' : 'sealed',
      `${step}: batch ${batch.id}`,
    );
    assert.equal(
      completions.get(batch.id) ?? 0,
      batch.ended ? 1 : 0,
      `${step}: completion jobs of ${batch.id}`,
    );
    assert.deepEqual(
      deaths.get(batch.id) ?? [],
      batch.firstDead === null ? [] : [batch.firstDead],
      `${step}: on_death jobs of ${batch.id}`,
    );
  }
}

/**
 * Runs `steps` random steps from `seed` on `engine` (opened with limits.max_queues high and
 * completed jobs kept, or none kept with `ackBatches`), checking `rows` after each; returns a
 * line that says what it did.
 */
export async function runWorkflowsModel(
  engine: Engine,
  rows: WorkflowRows,
  { seed, steps, ackBatches = false }: { seed: number; steps: number; ackBatches?: boolean },
): Promise<string> {
  const random = mulberry32(seed);
  const int = intsFrom(random);
  const pick = <T>(list: readonly T[]): T | undefined =>
    list.length === 0 ? undefined : list[int(0, list.length - 1)];
  const counts: Record<string, number> = {};
  const model = new Model();
  let queues = 0;
  const newJob = (policy: DependencyPolicy, batch: ModelBatch | null = null): ModelJob => ({
    id: '',
    queue: `m${++queues}`,
    state: 'ready',
    policy,
    edges: new Map(),
    batch,
    counted: false,
  });
  for (let step = 0; step < steps; step++) {
    const roll = int(0, 99);
    const ready = model.jobs.filter((j) => j.state === 'ready');
    let what: string;
    if (roll < 40 || model.jobs.length < 3) {
      what = 'enqueue';
      const job = newJob(pick(policies)!);
      // A completed job may be gone without retention (unknown_dependency): not named then.
      // (and with them, mostly jobs not ended yet, so that the acks of a batch release jobs together).
      const named = ackBatches
        ? model.jobs.filter((j) => j.state === 'ready' || (j.state !== 'completed' && int(0, 2) === 0))
        : model.jobs;
      const parents = [...new Set(Array.from({ length: int(0, 3) }, () => pick(named)!).filter(Boolean))];
      const failed = parents.some((p) => p.state === 'dead' || p.state === 'cancelled');
      const result = await engine.enqueueBatch([
        {
          queue: job.queue,
          type: 't',
          payload: bytes('x'),
          ...(parents.length === 0
            ? {}
            : { dependsOn: parents.map((p) => p.id), onDependencyFailure: job.policy }),
        },
      ]);
      const [answer] = result;
      if (failed && job.policy === 'cancel') {
        assert.ok(
          answer && !answer.ok && answer.reason === 'dependency_failed',
          `step ${step}: ${JSON.stringify(answer)}`,
        );
        what = 'enqueue refused';
      } else {
        assert.ok(answer?.ok, `step ${step}: ${JSON.stringify(answer)}`);
        job.id = answer.jobId;
        for (const p of parents) {
          const edge =
            p.state === 'completed'
              ? 'completed'
              : p.state === 'dead' || p.state === 'cancelled'
                ? job.policy === 'run'
                  ? 'failed'
                  : 'pending'
                : 'pending';
          job.edges.set(p.id, edge);
        }
        job.state = [...job.edges.values()].includes('pending') ? 'waiting' : 'ready';
        model.jobs.push(job);
      }
    } else if (roll < 60 && ready.length > 0 && ackBatches) {
      what = 'complete together';
      const jobs = [...new Set(Array.from({ length: int(2, 8) }, () => pick(ready)!))];
      const acks = [];
      for (const job of jobs) acks.push({ jobId: job.id, attempt: (await leaseOne(engine, job)).attempt });
      // Half of them padded to 10 acks (the multi-row path on any server), half not: from 2 acks a
      // server that has had a waiting job takes the same path (ack-batch.ts).
      const padTo = int(0, 1) === 0 ? 10 : 0;
      for (let i = 0; acks.length < padTo; i++)
        acks.splice(int(0, acks.length), 0, { jobId: `gone-${i}`, attempt: 1 });
      const outcomes = await engine.ackBatch(acks);
      assert.deepEqual(
        outcomes.map((o) => (o.ok ? 'ok' : o.code)),
        acks.map((a) => (a.jobId.startsWith('gone-') ? 'not_found' : 'ok')),
        `step ${step}`,
      );
      for (const ack of acks) {
        const job = jobs.find((j) => j.id === ack.jobId);
        if (job !== undefined) model.end(job, 'completed');
      }
    } else if (roll < 60 && ready.length > 0) {
      what = 'complete';
      const job = pick(ready)!;
      const leased = await leaseOne(engine, job);
      await engine.ack({ jobId: job.id, attempt: leased.attempt });
      model.end(job, 'completed');
    } else if (roll < 70 && ready.length > 0) {
      what = 'dead';
      const job = pick(ready)!;
      const leased = await leaseOne(engine, job);
      await engine.nack({
        jobId: job.id,
        attempt: leased.attempt,
        error: 'x',
        directive: { kind: 'dead_letter' },
      });
      model.end(job, 'dead');
    } else if (roll < 80) {
      what = 'cancel';
      const job = pick(model.jobs.filter((j) => j.state === 'ready' || j.state === 'waiting'));
      if (job === undefined) continue;
      await engine.cancel(job.id);
      model.end(job, 'cancelled');
    } else if (roll < 85) {
      what = 'requeue';
      const job = pick(model.jobs.filter((j) => j.state === 'dead'));
      if (job === undefined) continue;
      await engine.requeueJob(job.id);
      job.state = 'ready';
    } else if (roll < 88) {
      what = 'delete dead';
      const job = pick(model.jobs.filter((j) => j.state === 'dead'));
      if (job === undefined) continue;
      assert.equal(await engine.deleteDeadLetters({ queue: job.queue, jobIds: [job.id] }), 1, `step ${step}`);
      model.delete(job);
    } else {
      what = 'batch';
      const batch: ModelBatch = { id: '', members: [], ended: false, firstDead: null };
      const members = Array.from({ length: int(1, 3) }, () => newJob('cancel', batch));
      const created = await engine.createBatch({
        onComplete: {
          queue: 'callbacks',
          type: 'done',
          payload: bytes('{}'),
          contentType: 'application/json',
        },
        onDeath: { queue: 'callbacks', type: 'died', payload: new Uint8Array() },
        jobs: members.map((m) => ({ queue: m.queue, type: 't', payload: bytes('x') })),
        seal: true,
      });
      batch.id = created.batch.id;
      created.results.forEach((r, i) => {
        assert.ok(r.ok);
        members[i]!.id = r.jobId;
      });
      batch.members.push(...members);
      model.jobs.push(...members);
      model.batches.push(batch);
    }
    counts[what] = (counts[what] ?? 0) + 1;
    await check(rows, model, `step ${step} (${what})`, ackBatches);
    if (step % 50 === 49) assert.deepEqual(await engine.counterMismatches(), [], `step ${step}: counters`);
  }
  const states: Record<string, number> = {};
  for (const j of model.jobs) states[j.state] = (states[j.state] ?? 0) + 1;
  return (
    `seed ${seed}, ${steps} steps ${JSON.stringify(counts)}; ` +
    `${model.jobs.length} jobs ${JSON.stringify(states)}, ${model.batches.length} batches (${model.batches.filter((b) => b.ended).length} ended)`
  );
}
