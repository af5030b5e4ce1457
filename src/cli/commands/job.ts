/** `sepp job ID`: everything the server knows about one job; with --wait, how it ended. */
import type { Argv } from 'yargs';
import type { Job, JobOutcome } from '../../../clients/typescript/src/index.ts';
import { exitCodes, UsageError } from '../failure.ts';
import type { CliIo } from '../io.ts';
import { print, printJson, runWithClient, wantsJson, withConnection } from './connection.ts';
import { decodeBytes, decodePayload, jobJson, resultJson, showDecoded, time } from './format.ts';

/** Longest payload shown to people; --output json has all of it. */
const payloadShownBytes = 4096;

/** How a job deleted as it finished was deleted, for `sepp job ID`. */
const deletedWhen = { completed: 'on completion', dead: 'when it went dead', cancelled: 'when cancelled' };

/** A job deleted as it finished: the outcome the server still keeps, and no payload. */
function describeOutcomeOnly(job: Job): string {
  const state = job.state as keyof typeof deletedWhen;
  const rows: [string, string][] = [
    ['id', job.id],
    ['queue', job.queue],
    ['type', job.type],
    ['state', job.deadReason === null ? job.state : `${job.state} (${job.deadReason})`],
    ['attempt', String(job.attempt)],
  ];
  if (job.failedAt !== null) rows.push(['failed at', time(job.failedAt)]);
  if (job.completedAt !== null) rows.push(['completed at', time(job.completedAt)]);
  if (job.cancelledAt !== null)
    rows.push(['cancelled', `${time(job.cancelledAt)} by ${job.cancelledBy ?? '-'}`]);
  if (job.lastError !== null) rows.push(['last error', job.lastError]);
  rows.push([
    'note',
    `deleted ${deletedWhen[state] ?? 'as it finished'} (its queue keeps no ${job.state} jobs); the server ` +
      'keeps only its outcome for a few minutes (limits.finished_outcome_ms), not its payload or metadata',
  ]);
  return [...describeRows(rows), ...describeResult(job, width(rows))].join('\n');
}

function describeJob(job: Job): string {
  if (job.outcomeOnly) return describeOutcomeOnly(job);
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
    if (job.timeoutAt !== null) rows.push(['times out at', time(job.timeoutAt)]);
  }
  if (job.timeoutMs !== null) rows.push(['timeout', `${job.timeoutMs} ms`]);
  if (job.debounceKey !== null) {
    const cap = job.debounceUntil === null ? '' : ` (pushed back at most to ${time(job.debounceUntil)})`;
    rows.push(['debounce key', `${job.debounceKey}${cap}`]);
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
  if (job.progress !== null) rows.push(['progress', describeProgress(job.progress)]);
  const link = (l: Job['dependencies'][number]) => `${l.name ?? l.id} (${l.state ?? 'swept'})`;
  if (job.dependencies.length > 0) rows.push(['depends on', job.dependencies.map(link).join(', ')]);
  if (job.dependents.length > 0) rows.push(['dependents', job.dependents.map(link).join(', ')]);
  if (job.batchId !== null) rows.push(['batch', job.batchId]);
  rows.push(['payload', `${job.payloadBytes} bytes, ${job.contentType}`]);
  const lines = describeRows(rows);
  if (job.payloadBytes > 0) lines.push(...indent(showDecoded(decodePayload(job), payloadShownBytes)));
  lines.push(...describeResult(job, width(rows)));
  if (job.errors.length > 0) {
    lines.push('errors');
    const last = job.errors.at(-1);
    for (const e of job.errors) {
      const kind = e.errorClass === null ? '' : ` [${e.errorClass}]`;
      lines.push(`  attempt ${e.attempt} at ${time(e.at)}${kind}: ${e.error}`);
      // The newest attempt's stack; every attempt's is in --json.
      if (e === last && e.stack !== null) lines.push(...e.stack.split('\n').map((line) => `    ${line}`));
    }
  }
  return lines.join('\n');
}

function width(rows: readonly [string, string][]): number {
  return Math.max(...rows.map(([k]) => k.length));
}

function describeRows(rows: readonly [string, string][]): string[] {
  const w = width(rows);
  return rows.map(([k, v]) => `${k.padEnd(w)}  ${v}`);
}

function describeResult(job: Job, w: number): string[] {
  if (job.resultBytes === null || job.resultContentType === null) return [];
  const lines = [`${'result'.padEnd(w)}  ${job.resultSize} bytes, ${job.resultContentType}`];
  const shown = showDecoded(decodeBytes(job.resultBytes, job.resultContentType), payloadShownBytes);
  if (job.resultSize > 0) lines.push(...indent(shown));
  return lines;
}

function indent(text: string): string[] {
  return text.split('\n').map((l) => `  ${l}`);
}

function describeProgress(progress: NonNullable<Job['progress']>): string {
  const parts = progress.percent === null ? [] : [`${progress.percent}%`];
  if (progress.data !== null) parts.push(JSON.stringify(progress.data));
  return `${parts.join(' ')} (at ${time(progress.reportedAt)})`;
}

function outcomeJson(outcome: JobOutcome) {
  switch (outcome.state) {
    case 'completed':
      return {
        id: outcome.jobId,
        state: outcome.state,
        at: outcome.at,
        ...resultJson(outcome.resultBytes, outcome.resultContentType),
      };
    case 'dead':
      return {
        id: outcome.jobId,
        state: outcome.state,
        at: outcome.at,
        reason: outcome.reason,
        error: outcome.error,
      };
    case 'cancelled':
      return { id: outcome.jobId, state: outcome.state, at: outcome.at };
  }
}

function describeOutcome(outcome: JobOutcome): string {
  switch (outcome.state) {
    case 'completed': {
      const { resultBytes, resultContentType } = outcome;
      const head = `job ${outcome.jobId} completed at ${time(outcome.at)}`;
      if (resultBytes === null || resultContentType === null) return `${head}, without a result`;
      const shown = showDecoded(decodeBytes(resultBytes, resultContentType), payloadShownBytes);
      return [`${head}; result (${resultBytes.length} bytes, ${resultContentType}):`, ...indent(shown)].join(
        '\n',
      );
    }
    case 'dead':
      return `job ${outcome.jobId} is dead (${outcome.reason ?? 'unknown reason'}) since ${time(outcome.at)}: ${outcome.error ?? 'no error recorded'}`;
    case 'cancelled':
      return `job ${outcome.jobId} was cancelled${outcome.at === null ? '' : ` at ${time(outcome.at)}`}`;
  }
}

export function registerJobCommand(parser: Argv, io: CliIo): void {
  parser.command(
    'job <id>',
    'Show a job: state, attempts, times, progress, payload, result and error history; --wait waits for it to finish',
    (y) =>
      withConnection(io, y.positional('id', { type: 'string', demandOption: true, describe: 'Job id' }))
        .option('wait', {
          type: 'boolean',
          describe:
            'Wait until the job has finished and show how it ended; exit 0 when completed, 1 when dead or cancelled',
        })
        .option('timeout-ms', {
          type: 'number',
          describe: 'With --wait: give up after this many ms (exit 6); default: wait as long as it takes',
        }),
    (args) =>
      runWithClient(io, args, async (client) => {
        if (args.wait !== true) {
          if (args['timeout-ms'] !== undefined) throw new UsageError('--timeout-ms goes with --wait');
          const job = await client.getJob(args.id);
          if (wantsJson(args)) printJson(io, jobJson(job, true));
          else print(io, describeJob(job));
          return;
        }
        const timeoutMs = args['timeout-ms'];
        if (timeoutMs !== undefined && !(Number.isInteger(timeoutMs) && timeoutMs > 0)) {
          throw new UsageError('--timeout-ms must be a positive whole number of milliseconds');
        }
        const outcome = await client.waitFor(args.id, timeoutMs === undefined ? {} : { timeoutMs });
        if (wantsJson(args)) printJson(io, outcomeJson(outcome));
        else print(io, describeOutcome(outcome));
        if (outcome.state !== 'completed') io.exitCode = exitCodes.failed;
      }),
  );
}
