/**
 * The single executable's private directory on disk, for the embedded files that must be
 * real files to be used: the SQLite addon (a shared library is loaded from a file) and
 * data files that bundled dependencies read by path (package-files.ts).
 *
 * One per process: `$TMPDIR/sepp-native-<pid>-XXXXXX`, mode 0700, created on first use
 * and removed when the process exits. Directories left by a process that died without
 * exiting (SIGKILL, a crash) are removed when the next one is created.
 */
import { chmodSync, lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const prefix = 'sepp-native-';

let dir: string | undefined;

/** The private directory cannot be made; the message names TMPDIR and what to do. */
export class PrivateDirError extends Error {
  override name = 'PrivateDirError';
}

export function privateRunDir(): string {
  if (dir === undefined) {
    removeStaleNativeDirs(tmpdir());
    let created: string;
    try {
      created = mkdtempSync(join(tmpdir(), `${prefix}${process.pid}-`));
    } catch (error) {
      const code = error instanceof Error && 'code' in error ? ` (${String(error.code)})` : '';
      throw new PrivateDirError(
        `cannot create a private directory in ${tmpdir()}${code}: this executable unpacks its SQLite ` +
          'addon there; point TMPDIR at a writable directory',
      );
    }
    // mkdtemp already creates 0700; say so explicitly, whatever the umask.
    chmodSync(created, 0o700);
    process.once('exit', () => rmSync(created, { recursive: true, force: true }));
    dir = created;
  }
  return dir;
}

/**
 * Removes `sepp-native-<pid>-*` directories in `base` whose process is gone and which
 * belong to this user. Best effort: a failure here must never stop the server from
 * starting. (A pid reused since, or a live process in another pid namespace sharing this
 * directory, keeps or loses a directory it no longer needs once its addon is loaded.)
 */
export function removeStaleNativeDirs(base: string): void {
  let names: string[];
  try {
    names = readdirSync(base);
  } catch {
    return;
  }
  const uid = process.getuid?.();
  for (const name of names) {
    const match = /^sepp-native-(\d+)-/.exec(name);
    const pid = Number(match?.[1]);
    if (!match || pid === process.pid || processAlive(pid)) continue;
    const path = join(base, name);
    try {
      const stat = lstatSync(path);
      // Only our own real directories: never follow a symlink or touch another user's files.
      if (!stat.isDirectory() || (uid !== undefined && stat.uid !== uid)) continue;
      rmSync(path, { recursive: true, force: true });
    } catch {
      // Raced with another process cleaning up, or not ours to remove.
    }
  }
}

/** Whether process `pid` exists (ours or another user's). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
