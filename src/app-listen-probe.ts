/**
 * On PostgreSQL, the listen addresses are tried before the store is opened — each bound and
 * let go at once — so that a start whose port is taken (the server it replaces still running
 * on this machine) stops before it migrates anything. The schema is shared: a newer
 * sepp that migrated it and then could not listen would leave every running server of the
 * older version refusing its calls (docs/upgrading.md, "On PostgreSQL") and none of the newer
 * one serving. The real bind, after the store is open, can still fail (a port taken in
 * between); that start fails as before, with the same message.
 */
import { createServer } from 'node:net';
import type { ListenAddress } from './config/index.ts';

export interface ListenTarget {
  /** What listens there, for the message: `gRPC`, `HTTP`. */
  readonly what: string;
  /** The setting that names the address. */
  readonly setting: string;
  readonly listen: ListenAddress;
}

/** Why `target` cannot be listened on now, in the words of the start's own failure; null when it can. */
async function tryListen(target: ListenTarget): Promise<string | null> {
  const { host, port, address } = target.listen;
  // Port 0 is the system's choice: nothing to find taken.
  if (port === 0) return null;
  const server = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host, port, exclusive: true }, resolve);
    });
    return null;
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    return `cannot listen for ${target.what} on ${address}: ${detail} (${target.setting})`;
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** The first problem of the targets, in order, or null when each can be listened on. */
export async function listenProblem(targets: readonly ListenTarget[]): Promise<string | null> {
  for (const target of targets) {
    const problem = await tryListen(target);
    if (problem !== null) return problem;
  }
  return null;
}
