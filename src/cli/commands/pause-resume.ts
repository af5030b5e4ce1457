/** `sepp pause QUEUE` and `sepp resume QUEUE`. */
import type { Argv } from 'yargs';
import { print, printJson, runWithClient, wantsJson, withConnection } from './connection.ts';

export function registerPauseResumeCommands(parser: Argv): void {
  parser.command(
    'pause <queue>',
    'Pause a queue: it hands out no jobs until resumed (enqueue still works)',
    (y) =>
      withConnection(y.positional('queue', { type: 'string', demandOption: true, describe: 'Queue name' })),
    (args) =>
      runWithClient(args, async (client) => {
        await client.pauseQueue(args.queue);
        if (wantsJson(args)) printJson({ queue: args.queue, paused: true });
        else print(`paused ${args.queue}: it hands out no jobs until \`sepp resume ${args.queue}\``);
      }),
  );
  parser.command(
    'resume <queue>',
    'Resume a paused queue',
    (y) =>
      withConnection(y.positional('queue', { type: 'string', demandOption: true, describe: 'Queue name' })),
    (args) =>
      runWithClient(args, async (client) => {
        await client.resumeQueue(args.queue);
        if (wantsJson(args)) printJson({ queue: args.queue, paused: false });
        else print(`resumed ${args.queue}`);
      }),
  );
}
