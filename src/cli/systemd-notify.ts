/**
 * Readiness for systemd's `Type=notify`: when systemd started sepp with a
 * NOTIFY_SOCKET, tell it `READY=1` once both ports listen and the database is
 * open, and `STOPPING=1` when shutdown begins.
 *
 * The protocol is one datagram on a Unix socket (SOCK_DGRAM). Node cannot
 * send one: `dgram` speaks only UDP and `net` only stream sockets, and a
 * native addon for it would be a second native module to build and embed. So
 * sepp runs systemd's own `systemd-notify`, which is on every machine that
 * has systemd. Because the sender is then a child process, the unit says
 * `NotifyAccess=all`; systemd-notify waits (its default barrier) until systemd
 * has read the message, so systemd still sees it come from the service's
 * cgroup. Without NOTIFY_SOCKET nothing is run.
 */
import { spawn } from 'node:child_process';
import type { Logger } from '../telemetry/logger.ts';

/** Sends `VARIABLE=VALUE` lines to systemd when it asked for them; never throws, never waits. */
export function notifySystemd(
  assignments: readonly string[],
  logger: Logger,
  env: Readonly<Record<string, string | undefined>>,
): void {
  if (!env.NOTIFY_SOCKET) return;
  let child: ReturnType<typeof spawn>;
  try {
    child = spawn('systemd-notify', [...assignments], { stdio: 'ignore', env });
  } catch (error) {
    warn(logger, error);
    return;
  }
  child.on('error', (error) => warn(logger, error));
  child.on('exit', (code) => {
    if (code !== 0 && code !== null) warn(logger, new Error(`systemd-notify exited with code ${code}`));
  });
  // Never keep the process alive for it.
  child.unref();
}

function warn(logger: Logger, error: unknown): void {
  logger.warn('systemd.notify_failed', {
    error: error instanceof Error ? error.message : String(error),
    hint: 'NOTIFY_SOCKET is set but systemd-notify could not tell systemd; with Type=notify the start times out',
  });
}
