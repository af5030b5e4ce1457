/** `sepp dlq list|requeue|delete QUEUE`: inspect and act on a queue's dead letters. */
import type { Argv } from 'yargs';
import type { DeadLetterSelection, DeadReason, SeppClient } from '../../../clients/typescript/src/index.ts';
import { integerFlag, UsageError } from '../failure.ts';
import type { CliIo } from '../io.ts';
import { printStarted } from './bulk.ts';
import { confirmOrRefuse } from './confirm.ts';
import {
  type ConnectionArgs,
  print,
  printJson,
  runWithClient,
  wantsJson,
  withConnection,
} from './connection.ts';
import { cell, jobJson, table, time } from './format.ts';
import { pagingOf, printNextPage, withPaging } from './paging.ts';
import { requestKeyOf, requestKeyOption } from './request-key.ts';
import { explainUnknownQueue } from './unknown-queue.ts';

const reasons: readonly DeadReason[] = ['attempts_exhausted', 'lease_expired', 'dead_lettered'];

function selection(args: {
  ids?: readonly string[] | undefined;
  all?: boolean | undefined;
  background?: boolean | undefined;
  'request-key'?: string | undefined;
}): DeadLetterSelection {
  const given = args.ids ?? [];
  if (args.all === true && given.length > 0) throw new UsageError('give job ids or --all, not both');
  if (args.all === true) return 'all';
  if (given.length === 0) throw new UsageError('name the dead letters by id, or give --all');
  for (const flag of ['background', 'request-key'] as const) {
    if (args[flag] !== undefined && args[flag] !== false)
      throw new UsageError(`--${flag} goes with --all: chosen ids change at once`);
  }
  return given;
}

const backgroundOption = {
  type: 'boolean',
  describe: 'With --all: start it and print its id; do not wait',
} as const;

const dlqRequestKeyOption = { ...requestKeyOption, describe: `With --all: ${requestKeyOption.describe}` };

/**
 * Requeues or deletes dead letters and prints what it did: how many, or with
 * --background the operation begun (a declared queue that never held a job has
 * nothing to start: then the count, 0).
 */
async function changeDeadLetters(
  io: CliIo,
  client: SeppClient,
  args: ConnectionArgs & { queue: string; background?: boolean | undefined },
  action: 'requeue' | 'delete',
  which: DeadLetterSelection,
  keyed: { requestKey?: string },
): Promise<void> {
  let count: number;
  if (args.background === true) {
    const result = await client.dlq[action](args.queue, which, { ...keyed, background: true });
    if (result.operation !== null) {
      printStarted(io, args, result.operation);
      return;
    }
    count = result.changed;
  } else {
    count = await client.dlq[action](args.queue, which, keyed);
  }
  const done = action === 'requeue' ? 'requeued' : 'deleted';
  if (wantsJson(args)) printJson(io, { queue: args.queue, [done]: count });
  else print(io, `${done} ${count} dead letter${count === 1 ? '' : 's'} of ${args.queue}`);
}

async function deadCount(client: SeppClient, queue: string): Promise<number | undefined> {
  return (await client.listQueues()).find((q) => q.name === queue)?.counts.dead;
}

/**
 * Deleting every dead letter cannot be undone, and cancels the jobs still waiting on them (the
 * `wait` policy): ask on a terminal, insist on --yes elsewhere.
 */
async function confirmDeleteAll(
  io: CliIo,
  client: SeppClient,
  queue: string,
  yes: boolean | undefined,
): Promise<void> {
  if (yes === true) return;
  const count = io.stdin.isTTY ? await deadCount(client, queue) : undefined;
  await confirmOrRefuse(
    io,
    yes,
    `delete every dead letter of ${queue}`,
    `Delete all ${count ?? 'the'} dead letters of queue ${queue}? Jobs still waiting on them (onDependencyFailure: wait) are cancelled. This cannot be undone.`,
  );
}

function queuePositional<T>(y: Argv<T>) {
  return y.positional('queue', { type: 'string', demandOption: true, describe: 'Queue name' });
}

export function registerDlqCommands(parser: Argv, io: CliIo): void {
  parser.command('dlq', "Inspect, requeue or delete a queue's dead letters", (y) =>
    y
      .command(
        'list <queue>',
        'List dead letters, oldest first',
        (c) =>
          withConnection(
            io,
            withPaging(
              queuePositional(c)
                .option('reason', { choices: reasons, describe: 'Only dead letters with this reason' })
                .option('limit', { type: 'string', default: '100', describe: 'Most dead letters to show' }),
            ),
          ),
        (args) =>
          runWithClient(io, args, async (client) => {
            const paging = pagingOf(args);
            const limit =
              paging === null
                ? integerFlag('limit', args.limit, { min: 1, max: Number.MAX_SAFE_INTEGER })
                : Number.POSITIVE_INFINITY;
            const jobs = [];
            const reason = args.reason === undefined ? {} : { reason: args.reason };
            let nextPageToken: string | null = null;
            try {
              if (paging?.kind === 'page') {
                const page = await client.listDeadLetters(args.queue, {
                  ...reason,
                  ...(paging.pageSize === undefined ? {} : { pageSize: paging.pageSize }),
                  ...(paging.pageToken === '' ? {} : { pageToken: paging.pageToken }),
                });
                jobs.push(...page.jobs);
                nextPageToken = page.nextPageToken;
              } else {
                const query = { pageSize: Math.min(limit, 1000), ...reason };
                for await (const job of client.deadLetters(args.queue, query)) {
                  jobs.push(job);
                  if (jobs.length >= limit) break;
                }
              }
            } catch (error) {
              throw await explainUnknownQueue(client, args.queue, error);
            }
            if (wantsJson(args)) {
              const list = jobs.map((j) => jobJson(j, false));
              printJson(io, paging?.kind === 'page' ? { jobs: list, nextPageToken } : list);
              return;
            }
            if (jobs.length === 0) {
              print(io, `no dead letters in ${args.queue}`);
              return;
            }
            print(
              io,
              table(
                ['ID', 'TYPE', 'ATTEMPTS', 'REASON', 'FAILED AT', 'LAST ERROR'],
                jobs.map((j) => [
                  j.id,
                  j.type,
                  `${j.attempt}/${j.maxAttempts}`,
                  j.deadReason ?? '-',
                  time(j.failedAt),
                  cell(j.lastError),
                ]),
              ),
            );
            if (jobs.length === limit) print(io, `(first ${limit}; --limit or --all shows more)`);
            printNextPage(io, nextPageToken);
          }),
      )
      .command(
        'requeue <queue> [ids..]',
        'Make dead letters ready again with a fresh attempt budget',
        (c) =>
          withConnection(
            io,
            queuePositional(c)
              .positional('ids', { type: 'string', array: true, describe: 'Job ids' })
              .option('all', { type: 'boolean', describe: 'Every dead letter of the queue' })
              .option('background', backgroundOption)
              .option('request-key', dlqRequestKeyOption),
          ),
        (args) =>
          runWithClient(io, args, async (client) => {
            const which = selection(args);
            await changeDeadLetters(io, client, args, 'requeue', which, requestKeyOf(args));
          }),
      )
      .command(
        'delete <queue> [ids..]',
        'Delete dead letters for good; jobs still waiting on them are cancelled',
        (c) =>
          withConnection(
            io,
            queuePositional(c)
              .positional('ids', { type: 'string', array: true, describe: 'Job ids' })
              .option('all', { type: 'boolean', describe: 'Every dead letter of the queue (asks first)' })
              .option('yes', {
                alias: 'y',
                type: 'boolean',
                describe: 'Do not ask (required with --all off a terminal)',
              })
              .option('background', backgroundOption)
              .option('request-key', dlqRequestKeyOption),
          ),
        (args) =>
          runWithClient(io, args, async (client) => {
            const which = selection(args);
            const keyed = requestKeyOf(args);
            if (which === 'all') await confirmDeleteAll(io, client, args.queue, args.yes);
            await changeDeadLetters(io, client, args, 'delete', which, keyed);
          }),
      )
      .command(
        'top-errors <queue>',
        "Group a queue's dead letters by their last error's class and first line, most first",
        (c) =>
          withConnection(
            io,
            queuePositional(c).option('limit', {
              type: 'string',
              default: '20',
              describe: 'Most groups to show (1 to 100)',
            }),
          ),
        (args) =>
          runWithClient(io, args, async (client) => {
            const limit = integerFlag('limit', args.limit, { min: 1, max: 100 });
            let top: Awaited<ReturnType<SeppClient['dlq']['topErrors']>>;
            try {
              top = await client.dlq.topErrors(args.queue, { limit });
            } catch (error) {
              throw await explainUnknownQueue(client, args.queue, error);
            }
            if (wantsJson(args)) {
              printJson(io, {
                ...top,
                groups: top.groups.map((g) => ({
                  errorClass: g.errorClass,
                  firstLine: g.firstLine,
                  jobs: g.jobs,
                  firstFailedAt: g.firstFailedAt.toISOString(),
                  lastFailedAt: g.lastFailedAt.toISOString(),
                })),
              });
              return;
            }
            if (top.groups.length === 0) {
              print(io, `no dead letters in ${args.queue}`);
              return;
            }
            print(
              io,
              table(
                ['JOBS', 'CLASS', 'FIRST LINE', 'FIRST FAILED', 'LAST FAILED'],
                top.groups.map((g) => [
                  String(g.jobs),
                  g.errorClass === '' ? '-' : g.errorClass,
                  cell(g.firstLine),
                  time(g.firstFailedAt),
                  time(g.lastFailedAt),
                ]),
              ),
            );
            if (!top.complete)
              print(io, `(among the newest ${top.scanned} of ${top.deadTotal} dead letters)`);
            if (top.groupCount > top.groups.length) {
              print(io, `(the ${top.groups.length} largest of ${top.groupCount} groups; --limit shows more)`);
            }
            print(
              io,
              `act on a group: sepp bulk requeue --queue ${args.queue} --state dead --error-class CLASS --error-line 'FIRST LINE'`,
            );
          }),
      )
      .demandCommand(1, 'name a dlq subcommand: list, requeue, delete or top-errors'),
  );
}
