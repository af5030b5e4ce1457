/**
 * The admin RPCs of a queue: pause, resume, delete, and its run-time settings
 * (set and reset). Each change carries its audit entry (audit-input.ts) into
 * the engine, which writes it in the same transaction.
 */

import type { QueueServiceServer } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { formatProblems, parseQueueSettingKeys, parseQueueSettingValues } from '../config/index.ts';
import { SeppError } from '../engine/errors.ts';
import { rpcAudit } from './audit-input.ts';
import { queueInfoToProto } from './convert.ts';
import type { RpcContext } from './rpc-context.ts';
import type { Unary } from './unary-wrapper.ts';
import { requireString } from './validate-fields.ts';

type QueueAdminHandlers = Pick<
  QueueServiceServer,
  'pauseQueue' | 'resumeQueue' | 'deleteQueue' | 'setQueueSettings' | 'resetQueueSettings'
>;

export function createQueueAdminHandlers(ctx: RpcContext, unary: Unary): QueueAdminHandlers {
  const { engine } = ctx;
  return {
    pauseQueue: unary('PauseQueue', 'admin', async (req, call, caller, observation) => {
      observation.annotate({ queue: req.queue });
      const queue = requireString(req.queue, 'queue');
      await engine.pauseQueue(queue, rpcAudit(ctx, caller, call.metadata, 'queue.pause', `queue:${queue}`), {
        allowMissing: req.allowMissing,
      });
      return {};
    }),

    resumeQueue: unary('ResumeQueue', 'admin', async (req, call, caller, observation) => {
      observation.annotate({ queue: req.queue });
      const queue = requireString(req.queue, 'queue');
      await engine.resumeQueue(
        queue,
        rpcAudit(ctx, caller, call.metadata, 'queue.resume', `queue:${queue}`),
        {
          allowMissing: req.allowMissing,
        },
      );
      return {};
    }),

    deleteQueue: unary('DeleteQueue', 'admin', async (req, call, caller, observation) => {
      const queue = requireString(req.queue, 'queue');
      observation.annotate({ queue });
      // Deleting leaves nothing behind to show who did it: the audit log keeps it.
      await engine.deleteQueue(queue, rpcAudit(ctx, caller, call.metadata, 'queue.delete', `queue:${queue}`));
      return {};
    }),

    setQueueSettings: unary('SetQueueSettings', 'admin', async (req, call, caller, observation) => {
      observation.annotate({ queue: req.queue });
      const queue = requireString(req.queue, 'queue');
      if (Object.keys(req.settings).length === 0) {
        throw new SeppError(
          'invalid_argument',
          'settings: name at least one setting, e.g. max_attempts = "10"',
        );
      }
      const parsed = parseQueueSettingValues(queue, req.settings);
      if (!parsed.ok) throw new SeppError('invalid_argument', formatProblems(parsed.problems));
      const info = await engine.changeQueueSettings(
        queue,
        { set: parsed.value },
        rpcAudit(ctx, caller, call.metadata, 'queue.settings.set', `queue:${queue}`, {
          settings: req.settings,
        }),
      );
      return { queue: queueInfoToProto(info) };
    }),

    resetQueueSettings: unary('ResetQueueSettings', 'admin', async (req, call, caller, observation) => {
      observation.annotate({ queue: req.queue });
      const queue = requireString(req.queue, 'queue');
      if (req.all === req.keys.length > 0) {
        throw new SeppError(
          'invalid_argument',
          'give keys (the settings to reset) or all, not both or neither',
        );
      }
      const keys = parseQueueSettingKeys(queue, req.keys);
      if (!keys.ok) throw new SeppError('invalid_argument', formatProblems(keys.problems));
      const info = await engine.changeQueueSettings(
        queue,
        { reset: req.all ? 'all' : keys.value },
        rpcAudit(
          ctx,
          caller,
          call.metadata,
          'queue.settings.reset',
          `queue:${queue}`,
          req.all ? { all: true } : { keys: req.keys },
        ),
      );
      return { queue: queueInfoToProto(info) };
    }),
  };
}
