/** `sepp purge QUEUE` (delete its ready and scheduled jobs) and `sepp audit` (who changed what). */
import type { Argv } from 'yargs';
import type { AuditEntry } from '../../../clients/typescript/src/index.ts';
import { UsageError } from '../failure.ts';
import type { CliIo } from '../io.ts';
import { printStarted } from './bulk.ts';
import { confirmOrRefuse } from './confirm.ts';
import { print, printJson, runWithClient, wantsJson, withConnection } from './connection.ts';
import { cell, table, time } from './format.ts';
import { requestKeyOf, requestKeyOption } from './request-key.ts';

/** What `details` says, shortly: its fields but the door, as key=value. */
function detailsCell(details: Record<string, unknown>): string {
  const shown = Object.entries(details)
    .filter(([key]) => key !== 'via')
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
  return cell(shown.join(' '), 80);
}

export function registerPurgeAuditCommands(parser: Argv, io: CliIo): void {
  parser.command(
    'purge <queue>',
    'Delete every ready and scheduled job of a queue (running jobs finish; dead letters stay)',
    (y) =>
      withConnection(
        io,
        y
          .positional('queue', { type: 'string', demandOption: true, describe: 'Queue name' })
          .option('yes', { alias: 'y', type: 'boolean', describe: 'Do not ask (required off a terminal)' })
          .option('background', { type: 'boolean', describe: 'Start it and print its id; do not wait' })
          .option('request-key', requestKeyOption),
      ),
    (args) =>
      runWithClient(io, args, async (client) => {
        const keyed = requestKeyOf(args);
        const counts = io.stdin.isTTY
          ? (await client.listQueues()).find((q) => q.name === args.queue)?.counts
          : undefined;
        const waiting = counts === undefined ? 'the' : String(counts.ready + counts.scheduled);
        await confirmOrRefuse(
          io,
          args.yes,
          `purge ${args.queue}`,
          `Delete ${waiting} ready and scheduled jobs of queue ${args.queue}? This cannot be undone.`,
        );
        if (args.background === true) {
          const { operation } = await client.queues.purge(args.queue, { ...keyed, background: true });
          if (operation === null) throw new Error('the server sent no operation');
          printStarted(io, args, operation);
          return;
        }
        const deleted = await client.queues.purge(args.queue, keyed);
        if (wantsJson(args)) printJson(io, { queue: args.queue, deleted });
        else
          print(io, `deleted ${deleted} ready and scheduled job${deleted === 1 ? '' : 's'} of ${args.queue}`);
      }),
  );
  parser.command(
    'audit',
    'List the audit log: every change operators made, through gRPC, the CLI or the admin UI, newest first',
    (y) =>
      withConnection(
        io,
        y
          .option('actor', {
            type: 'string',
            describe: 'Only this actor: key:NAME for an API key, or a user',
          })
          .option('action', { type: 'string', describe: 'Only this action, e.g. job.cancel, queue.purge' })
          .option('target', { type: 'string', describe: 'Only this target, e.g. queue:emails, job:ID' })
          .option('limit', { type: 'number', default: 50, describe: 'Most entries to show' }),
      ),
    (args) =>
      runWithClient(io, args, async (client) => {
        if (!Number.isInteger(args.limit) || args.limit < 1)
          throw new UsageError('--limit must be a positive integer');
        const entries: AuditEntry[] = [];
        let pageToken: string | null = null;
        do {
          const page: { entries: AuditEntry[]; nextPageToken: string | null } = await client.listAuditEntries(
            {
              ...(args.actor === undefined ? {} : { actor: args.actor }),
              ...(args.action === undefined ? {} : { action: args.action }),
              ...(args.target === undefined ? {} : { target: args.target }),
              pageSize: Math.min(args.limit - entries.length, 1000),
              ...(pageToken === null ? {} : { pageToken }),
            },
          );
          entries.push(...page.entries);
          pageToken = page.nextPageToken;
        } while (pageToken !== null && entries.length < args.limit);
        if (wantsJson(args)) {
          printJson(io, entries);
          return;
        }
        if (entries.length === 0) {
          print(io, 'no audit entries');
          return;
        }
        print(
          io,
          table(
            ['TIME', 'ACTOR', 'VIA', 'ACTION', 'TARGET', 'DETAILS'],
            entries.map((e) => [
              time(e.at),
              e.actor,
              typeof e.details.via === 'string' ? e.details.via : '-',
              e.action,
              e.target,
              detailsCell(e.details),
            ]),
          ),
        );
        if (entries.length === args.limit && pageToken !== null)
          print(io, `(newest ${args.limit}; --limit shows more)`);
      }),
  );
}
