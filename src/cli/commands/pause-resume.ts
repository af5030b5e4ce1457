/** `sepp pause QUEUE`, `sepp resume QUEUE` and `sepp queue delete QUEUE`. */
import type { Argv } from 'yargs';
import { print, printJson, runWithClient, wantsJson, withConnection } from './connection.ts';
import { explainUnknownQueue } from './unknown-queue.ts';

function queuePositional<T>(y: Argv<T>) {
  return y.positional('queue', { type: 'string', demandOption: true, describe: 'Queue name' });
}

function pauseOrResume(paused: boolean) {
  return (y: Argv) =>
    withConnection(
      queuePositional(y).option('create', {
        type: 'boolean',
        describe: paused
          ? 'Create the queue, paused, if nobody has used it yet (to fill it before any worker starts)'
          : 'Create the queue if nobody has used it yet',
      }),
    );
}

export function registerPauseResumeCommands(parser: Argv): void {
  for (const paused of [true, false]) {
    const verb = paused ? 'pause' : 'resume';
    parser.command(
      `${verb} <queue>`,
      paused
        ? 'Pause a queue: it hands out no jobs until resumed (enqueue still works)'
        : 'Resume a paused queue',
      pauseOrResume(paused),
      (args) =>
        runWithClient(args, async (client) => {
          const options = { allowMissing: args.create === true };
          try {
            await (paused ? client.pauseQueue(args.queue, options) : client.resumeQueue(args.queue, options));
          } catch (error) {
            throw await explainUnknownQueue(client, args.queue, error, `--create ${verb}s it anyway`);
          }
          if (wantsJson(args)) printJson({ queue: args.queue, paused });
          else if (paused)
            print(`paused ${args.queue}: it hands out no jobs until \`sepp resume ${args.queue}\``);
          else print(`resumed ${args.queue}`);
        }),
    );
  }
}

/** `sepp queue delete QUEUE`, one of the `sepp queue` subcommands (queue-settings.ts registers the group). */
export function queueDeleteCommand<T>(y: Argv<T>): Argv<T> {
  return y.command(
    'delete <queue>',
    'Delete a queue that holds no job in any state (one a typo created, say)',
    (c) => withConnection(queuePositional(c)),
    (args) =>
      runWithClient(args, async (client) => {
        try {
          await client.deleteQueue(args.queue);
        } catch (error) {
          throw await explainUnknownQueue(client, args.queue, error, '`sepp queues` lists the queues');
        }
        if (wantsJson(args)) printJson({ queue: args.queue, deleted: true });
        else print(`deleted queue ${args.queue}`);
      }),
  );
}
