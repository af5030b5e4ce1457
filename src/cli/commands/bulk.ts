/**
 * `sepp bulk`: act on every job a filter matches, in one queue or all of them
 * — requeue, cancel, run now, delete — as one server-side bulk operation
 * (counted first and confirmed, or --yes off a terminal), and follow such
 * operations: `sepp bulk list`, `sepp bulk status ID`, `sepp bulk stop ID`.
 */
import type { Argv } from 'yargs';
import type {
  BulkAction,
  BulkOperation,
  JobFilter,
  JobState,
  SeppClient,
} from '../../../clients/typescript/src/index.ts';
import { UsageError } from '../failure.ts';
import type { CliIo } from '../io.ts';
import { confirmOrRefuse } from './confirm.ts';
import {
  type ConnectionArgs,
  print,
  printJson,
  runWithClient,
  wantsJson,
  withConnection,
} from './connection.ts';
import { durationFlag } from './flag-values.ts';
import { table, time } from './format.ts';
import { requestKeyOf, requestKeyOption } from './request-key.ts';

interface FilterArgs extends ConnectionArgs {
  queue?: string | undefined;
  'all-queues'?: boolean | undefined;
  state?: string[] | undefined;
  type?: string | undefined;
  'type-prefix'?: string | undefined;
  group?: string | undefined;
  error?: string | undefined;
  'error-class'?: string | undefined;
  'error-line'?: string | undefined;
  /** Repeatable on every command (the parser's list): the last one counts here. */
  meta?: string | string[] | undefined;
  'older-than'?: string | undefined;
  'dry-run'?: boolean | undefined;
  background?: boolean | undefined;
  'request-key'?: string | undefined;
  yes?: boolean | undefined;
}

const verbs = [
  [
    'requeue',
    'requeue',
    'Requeue every dead, completed or cancelled job that matches (ready now, fresh attempts)',
  ],
  ['cancel', 'cancel', 'Cancel every scheduled, ready or leased job that matches'],
  ['run-now', 'update', 'Make every scheduled job that matches ready now'],
  ['delete', 'delete', 'Delete every job that matches and is not running'],
] as const satisfies readonly (readonly [string, BulkAction, string])[];

function withFilter<T>(io: CliIo, y: Argv<T>) {
  return withConnection(
    io,
    y
      .option('queue', { type: 'string', describe: 'One queue' })
      .option('all-queues', { type: 'boolean', describe: 'Every queue (instead of --queue)' })
      .option('state', { type: 'string', array: true, describe: 'Only jobs in these states' })
      .option('type', { type: 'string', describe: 'Only jobs of this type' })
      .option('type-prefix', { type: 'string', describe: 'Only jobs whose type starts with this' })
      .option('group', { type: 'string', describe: 'Only jobs of this group' })
      .option('error', { type: 'string', describe: 'Only jobs whose last error contains this (any case)' })
      .option('error-line', {
        type: 'string',
        describe: "Only jobs of this top-errors group: the last error's first line, exactly ('' is one too)",
      })
      .option('error-class', {
        type: 'string',
        describe: "With --error-line: the group's error class ('' or absent: none)",
      })
      .option('meta', { type: 'string', describe: 'Only jobs with this metadata value, as key=value' })
      .option('older-than', { type: 'string', describe: 'Only jobs enqueued longer ago than this, e.g. 2h' })
      .option('dry-run', { type: 'boolean', describe: 'Only count the jobs it would change' })
      .option('background', { type: 'boolean', describe: 'Start it and print its id; do not wait' })
      .option('request-key', requestKeyOption)
      .option('yes', { alias: 'y', type: 'boolean', describe: 'Do not ask (required off a terminal)' }),
  );
}

function filterOf(args: FilterArgs, nowMs: number): JobFilter {
  if ((args.queue === undefined) === (args['all-queues'] !== true)) {
    throw new UsageError('give --queue NAME or --all-queues (one of them)');
  }
  let metadata: JobFilter['metadata'];
  const meta = [args.meta ?? []].flat().at(-1);
  if (meta !== undefined) {
    const at = meta.indexOf('=');
    if (at <= 0) throw new UsageError('--meta must be key=value, for example tenant=acme');
    metadata = { key: meta.slice(0, at), value: meta.slice(at + 1) };
  }
  if (args['error-class'] !== undefined && args['error-line'] === undefined) {
    throw new UsageError('--error-class names a group with --error-line (see sepp dlq top-errors)');
  }
  return {
    ...(args.queue === undefined ? { allQueues: true } : { queue: args.queue }),
    ...(args.state === undefined ? {} : { states: args.state as JobState[] }),
    ...(args.type === undefined ? {} : { type: args.type }),
    ...(args['type-prefix'] === undefined ? {} : { typePrefix: args['type-prefix'] }),
    ...(args.group === undefined ? {} : { group: args.group }),
    ...(args.error === undefined ? {} : { errorText: args.error }),
    ...(args['error-line'] === undefined
      ? {}
      : { errorGroup: { errorClass: args['error-class'] ?? '', firstLine: args['error-line'] } }),
    ...(metadata === undefined ? {} : { metadata }),
    ...(args['older-than'] === undefined
      ? {}
      : { enqueuedBefore: nowMs - durationFlag('older-than', args['older-than']) }),
  };
}

function operationLine(op: BulkOperation): string {
  const matched = `${op.matchedAtLeast ? 'at least ' : ''}${op.matched}`;
  return `${op.id}  ${op.action}  ${op.state}  ${op.changed} of ${matched} changed`;
}

/**
 * A bulk operation started with --background: its line and how to follow it
 * (as JSON: the operation itself).
 */
export function printStarted(io: CliIo, args: ConnectionArgs, op: BulkOperation): void {
  if (wantsJson(args)) {
    printJson(io, op);
    return;
  }
  print(io, operationLine(op));
  print(io, `follow it: sepp bulk status ${op.id} (stop it: sepp bulk stop ${op.id})`);
}

async function waitFor(client: SeppClient, op: BulkOperation): Promise<BulkOperation> {
  let current = op;
  while (current.state === 'running') {
    await new Promise((resolve) => setTimeout(resolve, 500));
    current = await client.jobs.bulkOperation(op.id);
  }
  return current;
}

export function registerBulkCommands(parser: Argv, io: CliIo): void {
  parser.command(
    'bulk',
    'Act on every job a filter matches (one server-side operation), and follow it',
    (y) => {
      let sub = y;
      for (const [name, action, describe] of verbs) {
        sub = sub.command(
          name,
          describe,
          (z) => withFilter(io, z),
          (args) =>
            runWithClient(io, args, async (client) => {
              const filter = filterOf(args, Date.now());
              const keyed = requestKeyOf(args);
              const changes = action === 'update' ? { runNow: true } : {};
              const counted = await client.jobs.countMatching(action, filter);
              const count = `${counted.matchedAtLeast ? 'at least ' : ''}${counted.matched}`;
              if (args['dry-run'] === true) {
                if (wantsJson(args)) printJson(io, counted);
                else
                  print(
                    io,
                    `${count} matching job${counted.matched === 1 ? '' : 's'} would be changed (${name})`,
                  );
                return;
              }
              await confirmOrRefuse(
                io,
                args.yes,
                `${name} every matching job`,
                `${name} ${count} matching jobs?`,
              );
              const started = await client.jobs.startBulk(action, filter, changes, keyed);
              if (args.background === true) {
                printStarted(io, args, started);
                return;
              }
              const op = await waitFor(client, started);
              if (wantsJson(args)) printJson(io, op);
              else print(io, operationLine(op));
            }),
        );
      }
      return sub
        .command(
          'list',
          'The bulk operations running now and the last ones finished',
          (z) => withConnection(io, z),
          (args) =>
            runWithClient(io, args, async (client) => {
              const ops = await client.jobs.bulkOperations();
              if (wantsJson(args)) printJson(io, ops);
              else
                print(
                  io,
                  table(
                    ['ID', 'ACTION', 'STATE', 'CHANGED', 'MATCHED', 'STARTED'],
                    ops.map((o) => [
                      o.id,
                      o.action,
                      o.state,
                      String(o.changed),
                      `${o.matchedAtLeast ? '≥' : ''}${o.matched}`,
                      time(o.startedAt),
                    ]),
                  ),
                );
            }),
        )
        .command(
          'status <id>',
          "A bulk operation's progress",
          (z) => withConnection(io, z.positional('id', { type: 'string', demandOption: true })),
          (args) =>
            runWithClient(io, args, async (client) => {
              const op = await client.jobs.bulkOperation(args.id);
              if (wantsJson(args)) printJson(io, op);
              else print(io, operationLine(op));
            }),
        )
        .command(
          'stop <id>',
          'Stop a running bulk operation after its current slice',
          (z) => withConnection(io, z.positional('id', { type: 'string', demandOption: true })),
          (args) =>
            runWithClient(io, args, async (client) => {
              const op = await client.jobs.stopBulkOperation(args.id);
              if (wantsJson(args)) printJson(io, op);
              else print(io, operationLine(op));
            }),
        )
        .demandCommand(1, 'name a bulk subcommand: requeue, cancel, run-now, delete, list, status or stop');
    },
  );
}
