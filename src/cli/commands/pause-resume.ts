/** `sepp pause QUEUE`, `sepp resume QUEUE` and `sepp queue delete QUEUE`. */
import type { Argv } from 'yargs';
import type { CliIo } from '../io.ts';
import { print, printJson, runWithClient, wantsJson, withConnection } from './connection.ts';
import { explainUnknownQueue } from './unknown-queue.ts';

function queuePositional<T>(y: Argv<T>) {
  return y.positional('queue', { type: 'string', demandOption: true, describe: 'Queue name' });
}

function pauseOrResume(io: CliIo, paused: boolean) {
  return (y: Argv) =>
    withConnection(
      io,
      queuePositional(y).option('create', {
        type: 'boolean',
        describe: paused
          ? 'Create the queue, paused, if nobody has used it yet (to fill it before any worker starts)'
          : 'Create the queue if nobody has used it yet',
      }),
    );
}

export function registerPauseResumeCommands(parser: Argv, io: CliIo): void {
  for (const paused of [true, false]) {
    const verb = paused ? 'pause' : 'resume';
    parser.command(
      `${verb} <queue>`,
      paused
        ? 'Pause a queue: it hands out no jobs until resumed (enqueue still works)'
        : 'Resume a paused queue',
      pauseOrResume(io, paused),
      (args) =>
        runWithClient(io, args, async (client) => {
          const options = { allowMissing: args.create === true };
          try {
            await (paused ? client.pauseQueue(args.queue, options) : client.resumeQueue(args.queue, options));
          } catch (error) {
            throw await explainUnknownQueue(client, args.queue, error, `--create ${verb}s it anyway`);
          }
          if (wantsJson(args)) printJson(io, { queue: args.queue, paused });
          else if (paused)
            print(io, `paused ${args.queue}: it hands out no jobs until \`sepp resume ${args.queue}\``);
          else print(io, `resumed ${args.queue}`);
        }),
    );
  }
}

/** `sepp queue delete QUEUE`, one of the `sepp queue` subcommands (queue-settings.ts registers the group). */
export function queueDeleteCommand<T>(io: CliIo, y: Argv<T>): Argv<T> {
  return y.command(
    'delete <queue>',
    'Delete a queue that holds no job in any state (one a typo created, say)',
    (c) => withConnection(io, queuePositional(c)),
    (args) =>
      runWithClient(io, args, async (client) => {
        try {
          await client.deleteQueue(args.queue);
        } catch (error) {
          throw await explainUnknownQueue(client, args.queue, error, '`sepp queues` lists the queues');
        }
        if (wantsJson(args)) printJson(io, { queue: args.queue, deleted: true });
        else print(io, `deleted queue ${args.queue}`);
      }),
  );
}
