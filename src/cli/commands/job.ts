/** `sepp job ID`: everything the server knows about one job. */
import type { Argv } from 'yargs';
import type { Job } from '../../../clients/typescript/src/index.ts';
import { print, printJson, runWithClient, wantsJson, withConnection } from './connection.ts';
import { decodePayload, jobJson, time } from './format.ts';

/** Longest payload shown to people; --output json has all of it. */
const payloadShownBytes = 4096;

function describeJob(job: Job): string {
  const rows: [string, string][] = [
    ['id', job.id],
    ['queue', job.queue],
    ['type', job.type],
    ['state', job.deadReason === null ? job.state : `${job.state} (${job.deadReason})`],
    ['priority', String(job.priority)],
    ...(job.group === null ? [] : [['group', job.group] as [string, string]]),
    ['attempt', `${job.attempt} of ${job.maxAttempts}`],
    ['enqueued at', time(job.enqueuedAt)],
    ['run at', time(job.runAt)],
  ];
  if (job.leaseDeadline !== null) {
    rows.push(['leased at', time(job.leasedAt)], ['lease ends', time(job.leaseDeadline)]);
    rows.push(['worker', job.workerId ?? '-']);
  }
  if (job.failedAt !== null) rows.push(['failed at', time(job.failedAt)]);
  if (job.completedAt !== null) rows.push(['completed at', time(job.completedAt)]);
  if (job.expiresAt !== null) rows.push(['expires at', time(job.expiresAt)]);
  if (job.cancelledAt !== null) {
    const pending = job.state === 'leased' ? ' (its worker was told to stop)' : '';
    rows.push(['cancelled', `${time(job.cancelledAt)} by ${job.cancelledBy ?? '-'}${pending}`]);
  }
  if (job.idempotencyKey !== null) rows.push(['idempotency key', job.idempotencyKey]);
  const metadata = Object.entries(job.metadata);
  if (metadata.length > 0) rows.push(['metadata', metadata.map(([k, v]) => `${k}=${v}`).join(', ')]);
  if (job.traceparent !== null) rows.push(['traceparent', job.traceparent]);
  if (job.lastError !== null) rows.push(['last error', job.lastError]);
  rows.push(['payload', `${job.payloadBytes} bytes, ${job.contentType}`]);
  const width = Math.max(...rows.map(([k]) => k.length));
  const lines = rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`);
  if (job.payloadBytes > 0) {
    const { encoding, value } = decodePayload(job);
    let shown = encoding === 'json' ? JSON.stringify(value, null, 2) : String(value);
    if (shown.length > payloadShownBytes)
      shown = `${shown.slice(0, payloadShownBytes)}… (--output json shows all)`;
    lines.push(...shown.split('\n').map((l) => `  ${l}`));
  }
  if (job.errors.length > 0) {
    lines.push('errors');
    for (const e of job.errors) lines.push(`  attempt ${e.attempt} at ${time(e.at)}: ${e.error}`);
  }
  return lines.join('\n');
}

export function registerJobCommand(parser: Argv): void {
  parser.command(
    'job <id>',
    'Show a job: state, attempts, times, payload and error history',
    (y) => withConnection(y.positional('id', { type: 'string', demandOption: true, describe: 'Job id' })),
    (args) =>
      runWithClient(args, async (client) => {
        const job = await client.getJob(args.id);
        if (wantsJson(args)) printJson(jobJson(job, true));
        else print(describeJob(job));
      }),
  );
}
