/** The operator commands: they talk to a running server through the SDK. */
import type { Argv } from 'yargs';
import { registerBulkCommands } from './bulk.ts';
import { registerDlqCommands } from './dlq.ts';
import { registerEnqueueCommand } from './enqueue.ts';
import { registerEventsCommand } from './events.ts';
import { registerJobCommand } from './job.ts';
import { registerJobControlCommands } from './job-control.ts';
import { registerPauseResumeCommands } from './pause-resume.ts';
import { registerPurgeAuditCommands } from './purge-audit.ts';
import { registerQueueCommands } from './queue-settings.ts';
import { registerQueuesCommand } from './queues.ts';
import { registerScheduleCommands } from './schedules.ts';
import { registerStatusCommand } from './status.ts';
import { registerWorkersCommand } from './workers.ts';

export function registerOperatorCommands(parser: Argv): void {
  registerEnqueueCommand(parser);
  registerQueuesCommand(parser);
  registerJobCommand(parser);
  registerEventsCommand(parser);
  registerDlqCommands(parser);
  registerPauseResumeCommands(parser);
  registerScheduleCommands(parser);
  registerJobControlCommands(parser);
  registerPurgeAuditCommands(parser);
  registerBulkCommands(parser);
  registerQueueCommands(parser);
  registerWorkersCommand(parser);
  registerStatusCommand(parser);
}
