/**
 * Making and checking the data directory, and naming what is wrong with it in
 * words an operator can act on.
 *
 * The directory is created one level at a time, not with `mkdirSync(…,
 * { recursive: true })`: Node 20's recursive mkdir loops forever when mkdir
 * answers ENOENT for a path whose parent exists (as on /proc), burning a core
 * instead of failing.
 */
import { accessSync, constants, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** The data directory (or its database) cannot be used; the message says why and what to do. */
export class DataDirError extends Error {
  override name = 'DataDirError';
}

const reasons: Readonly<Record<string, string>> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'the file system is read-only',
  ENOSPC: 'the disk is full',
  EDQUOT: 'the disk quota is used up',
  ENOTDIR: 'a part of the path is a file, not a directory',
  ENOENT: 'the file system does not allow creating it there',
  ENAMETOOLONG: 'the path is too long',
  ELOOP: 'the path has a symbolic link loop',
  EIO: 'an I/O error',
};

function errnoOf(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}

function reasonOf(error: unknown): string {
  const code = errnoOf(error);
  const reason = code === undefined ? undefined : reasons[code];
  if (reason !== undefined) return `${reason} (${code})`;
  return error instanceof Error ? error.message : String(error);
}

function whoAmI(): string {
  const uid = process.getuid?.();
  return uid === undefined ? 'this user' : `uid ${uid}`;
}

/** The nearest ancestor of `path` that exists and is not a directory (what ENOTDIR is about). */
function fileInTheWay(path: string): string {
  let found = path;
  for (let dir = dirname(path); dirname(dir) !== dir; dir = dirname(dir)) {
    try {
      const stat = statSync(dir, { throwIfNoEntry: false });
      if (stat !== undefined && !stat.isDirectory()) found = dir;
    } catch {
      // ENOTDIR again: the file is further up.
    }
  }
  return found;
}

/** Creates `dataDir` (mode 0700) and any missing parents, then checks sepp can write in it. */
export function ensureDataDir(dataDir: string): void {
  const target = resolve(dataDir);
  const missing: string[] = [];
  let dir = target;
  for (;;) {
    let stat: ReturnType<typeof statSync>;
    try {
      stat = statSync(dir, { throwIfNoEntry: false });
    } catch (error) {
      if (errnoOf(error) === 'ENOTDIR') {
        throw new DataDirError(
          `cannot use the data directory ${target}: ${fileInTheWay(dir)} is a file, not a directory`,
        );
      }
      throw new DataDirError(`cannot use the data directory ${target}: ${reasonOf(error)} at ${dir}`);
    }
    if (stat !== undefined) {
      if (!stat.isDirectory()) {
        const what = dir === target ? 'it is a file, not a directory' : `${dir} is a file, not a directory`;
        throw new DataDirError(`cannot use the data directory ${target}: ${what}`);
      }
      break;
    }
    missing.unshift(dir);
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  for (const path of missing) {
    try {
      mkdirSync(path, { mode: 0o700 });
    } catch (error) {
      // Created meanwhile by someone else: fine, as long as it is a directory (checked next round).
      if (errnoOf(error) === 'EEXIST' && statSync(path, { throwIfNoEntry: false })?.isDirectory()) continue;
      throw new DataDirError(`cannot create the data directory ${target}: ${reasonOf(error)} at ${path}`);
    }
  }
  try {
    accessSync(target, constants.W_OK | constants.X_OK);
  } catch (error) {
    throw new DataDirError(`cannot write in the data directory ${target} as ${whoAmI()}: ${reasonOf(error)}`);
  }
}

/**
 * The DataDirError for an error opening the database file, or undefined when
 * it is none of the operating errors named here (a bug then; rethrow it).
 */
export function databaseOpenError(path: string, error: unknown): DataDirError | undefined {
  const code = errnoOf(error) ?? '';
  const message = error instanceof Error ? error.message : '';
  if (code === 'SQLITE_NOTADB' || /file is not a database/i.test(message)) {
    return new DataDirError(
      `${path} is not a SQLite database; move it away or choose another data directory`,
    );
  }
  if (code.startsWith('SQLITE_CORRUPT')) {
    return new DataDirError(
      `${path} is damaged (${code}); restore it from a backup (sepp backup makes them)`,
    );
  }
  if (code.startsWith('SQLITE_READONLY')) {
    return new DataDirError(
      `cannot write ${path} as ${whoAmI()}: the database or its directory is read-only`,
    );
  }
  if (code.startsWith('SQLITE_CANTOPEN')) {
    return new DataDirError(
      `cannot open ${path} as ${whoAmI()}: check that the file and its directory are writable`,
    );
  }
  if (code === 'SQLITE_FULL') return new DataDirError(`cannot write ${path}: the disk is full`);
  if (code.startsWith('SQLITE_IOERR'))
    return new DataDirError(`cannot write ${path}: an I/O error (${code})`);
  return undefined;
}
