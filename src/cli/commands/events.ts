/**
 * `sepp events`: job events as they are committed, one line each (for people)
 * or one JSON object per line (for scripts), until interrupted or --count.
 */
import type { Argv } from 'yargs';
import type { JobEvent, JobEventKind } from '../../../clients/typescript/src/index.ts';
import { UsageError } from '../failure.ts';
import type { CliIo } from '../io.ts';
import { print, runWithClient, wantsJson, withConnection } from './connection.ts';
import { cell, resultJson, time } from './format.ts';

const kinds: readonly JobEventKind[] = [
  'enqueued',
  'leased',
  'progress',
  'completed',
  'retry_scheduled',
  'dead_lettered',
  'cancelled',
  'released',
  'batch_ended',
  'batch_first_death',
  'lease_undone',
];

/** What a line says after the job, by kind. */
function detail(event: JobEvent): string {
  switch (event.kind) {
    case 'enqueued':
      return event.state === 'scheduled' ? `scheduled for ${time(event.runAt)}` : 'ready';
    case 'leased':
      return `attempt ${event.attempt}${event.workerId === null ? '' : ` by ${event.workerId}`}`;
    case 'progress': {
      const p = event.progress;
      if (p === null) return '';
      return [p.percent === null ? '' : `${p.percent}%`, p.data === null ? '' : cell(JSON.stringify(p.data))]
        .filter((s) => s !== '')
        .join(' ');
    }
    case 'completed': {
      if (event.resultBytes === null) return `attempt ${event.attempt}`;
      const shown = resultJson(event.resultBytes, event.resultContentType);
      const text = typeof shown.result === 'string' ? shown.result : JSON.stringify(shown.result);
      return `attempt ${event.attempt}, result ${cell(text)}`;
    }
    case 'retry_scheduled':
      return `attempt ${event.attempt} failed, again at ${time(event.runAt)}: ${cell(event.error)}`;
    case 'dead_lettered':
      return `${event.deadReason ?? ''}: ${cell(event.error)}`;
    case 'cancelled':
      return `was ${event.previousState ?? '?'}`;
    case 'batch_ended': {
      const b = event.batch;
      return b === null ? '' : `batch: ${b.completed} completed, ${b.dead} dead, ${b.cancelled} cancelled`;
    }
    case 'batch_first_death': {
      const b = event.batch;
      return b === null ? '' : `batch: job ${b.firstDeadId ?? '?'} died first, ${b.pending} pending`;
    }
    case 'lease_undone':
      return `attempt ${event.attempt} undone (never reached a worker, or given back), ready`;
    case 'released':
      return event.state === 'scheduled'
        ? `dependencies done, scheduled for ${time(event.runAt)}`
        : 'dependencies done, ready';
  }
}

function eventJson(event: JobEvent) {
  const { result: _decoded, resultBytes, resultContentType, ...rest } = event;
  return { ...rest, ...(event.kind === 'completed' ? resultJson(resultBytes, resultContentType) : {}) };
}

const asList = (value: unknown): string[] =>
  value === undefined ? [] : (Array.isArray(value) ? value : [value]).map(String);

export function registerEventsCommand(parser: Argv, io: CliIo): void {
  parser.command(
    'events',
    'Stream job events (enqueued, leased, progress, completed, retry_scheduled, dead_lettered, cancelled, released, batch_ended, batch_first_death, lease_undone) as they are committed',
    (y) =>
      withConnection(io, y)
        .option('queue', { type: 'string', array: true, describe: 'Only this queue (repeat for more)' })
        .option('job', { type: 'string', array: true, describe: 'Only this job id (repeat for more)' })
        .option('kind', {
          type: 'string',
          array: true,
          choices: kinds,
          describe: 'Only this kind (repeat for more)',
        })
        .option('from-oldest', {
          type: 'boolean',
          describe: 'Start with the oldest event the server still keeps instead of now',
        })
        .option('count', {
          type: 'number',
          describe: 'Stop after this many events (default: run until interrupted)',
        }),
    (args) =>
      runWithClient(io, args, async (client) => {
        const count = args.count;
        if (count !== undefined && !(Number.isInteger(count) && count > 0)) {
          throw new UsageError('--count must be a positive whole number');
        }
        const stop = new AbortController();
        const onSignal = () => stop.abort();
        io.signals.once('SIGINT', onSignal);
        io.signals.once('SIGTERM', onSignal);
        const subscription = client.events({
          queues: asList(args.queue),
          jobIds: asList(args.job),
          kinds: asList(args.kind) as JobEventKind[],
          fromOldest: args['from-oldest'] === true,
          signal: stop.signal,
        });
        let seen = 0;
        try {
          for await (const event of subscription) {
            if (wantsJson(args)) print(io, JSON.stringify(eventJson(event)));
            else {
              const where = `${event.queue}/${event.type}`;
              print(
                io,
                `${time(event.at)}  ${event.kind.padEnd(15)}  ${where}  ${event.jobId}  ${detail(event)}`,
              );
            }
            if (count !== undefined && ++seen >= count) break;
          }
        } finally {
          io.signals.off('SIGINT', onSignal);
          io.signals.off('SIGTERM', onSignal);
        }
      }),
  );
}
