/** The operator commands: they talk to a running server through the SDK. */
import type { Argv } from 'yargs';
import type { CliIo } from '../io.ts';
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
import { registerWorkflowCommands } from './workflows.ts';

export function registerOperatorCommands(parser: Argv, io: CliIo): void {
  registerEnqueueCommand(parser, io);
  registerQueuesCommand(parser, io);
  registerJobCommand(parser, io);
  registerEventsCommand(parser, io);
  registerDlqCommands(parser, io);
  registerPauseResumeCommands(parser, io);
  registerScheduleCommands(parser, io);
  registerJobControlCommands(parser, io);
  registerPurgeAuditCommands(parser, io);
  registerBulkCommands(parser, io);
  registerQueueCommands(parser, io);
  registerWorkersCommand(parser, io);
  registerWorkflowCommands(parser, io);
  registerStatusCommand(parser, io);
}
