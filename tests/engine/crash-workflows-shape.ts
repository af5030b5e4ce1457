/**
 * The workflows crash-workflows.test.ts and its child make: 1,000 fan-in flows (root →
 * four parts → final) whose jobs carry idempotency keys of their flow, so a flow enqueued
 * again after a kill is found, not doubled; and 100 sealed batches of five members with
 * an on_complete and an on_death job. Completed jobs are kept (for the checks); leases are short, so the
 * leases of a killed child run out and its jobs are delivered again.
 */
import type { FlowJob } from '../../src/engine/types.ts';
import type { CreateBatchRequest } from '../../src/engine/workflow-types.ts';

export const totalFlows = 1000;
export const totalBatches = 100;
export const partsPerFlow = 4;
export const membersPerBatch = 5;
export const workflowQueues = ['wf-root', 'wf-part', 'wf-final', 'wf-m', 'wf-done', 'wf-death'];

const settings = { maxAttempts: 1000, defaultLeaseMs: 1500, completedRetentionMs: 3_600_000 };
export const workflowQueueSettings = Object.fromEntries(workflowQueues.map((q) => [q, settings]));

export function flowJobs(flow: number): FlowJob[] {
  const job = (name: string, queue: string, after: string[] = []): FlowJob => ({
    name,
    after,
    queue,
    type: name.replace(/-\d+$/, ''),
    payload: Buffer.from(JSON.stringify({ flow })),
    contentType: 'application/json',
    idempotencyKey: `flow-${flow}-${name}`,
  });
  const parts = Array.from({ length: partsPerFlow }, (_, i) => `part-${i}`);
  return [
    job('root', 'wf-root'),
    ...parts.map((part) => job(part, 'wf-part', ['root'])),
    job('final', 'wf-final', parts),
  ];
}

export function batchRequest(batch: number): CreateBatchRequest {
  return {
    onComplete: {
      queue: 'wf-done',
      type: 'batch-done',
      payload: Buffer.from(JSON.stringify({ batch })),
      contentType: 'application/json',
    },
    onDeath: { queue: 'wf-death', type: 'batch-death', payload: new Uint8Array() },
    jobs: Array.from({ length: membersPerBatch }, (_, i) => ({
      queue: 'wf-m',
      type: 'member',
      payload: Buffer.from(JSON.stringify({ batch, i })),
    })),
    seal: true,
  };
}
