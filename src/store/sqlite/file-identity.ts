/**
 * Notices when the database file or its WAL is deleted or replaced while the
 * server runs (issue 29, item 8).
 *
 * SQLite keeps both open: after `rm sepp.db-wal` it goes on committing into the
 * deleted file, every commit still durable on its own inode, and a restart —
 * or a `kill -9` — loses every commit not yet checkpointed into sepp.db, with
 * nothing in the log. A file put in place of either (a restore copied over the
 * live one) is as bad: the server writes to a file nobody will open again.
 * What the paths name is compared with what was opened, by device and inode;
 * a path that is missing or names another file is the problem this reports.
 * A check is two stat() calls (about 10 µs together on the 2-core test machine).
 */
import { statSync } from 'node:fs';

interface Opened {
  readonly path: string;
  readonly what: string;
  readonly dev: number;
  readonly ino: number;
}

export class FileIdentity {
  private readonly opened: readonly Opened[];

  /** Records what `databaseFile` and its `-wal` name now, right after opening (both exist then). */
  constructor(databaseFile: string) {
    this.opened = [
      { path: databaseFile, what: 'the database file' },
      { path: `${databaseFile}-wal`, what: "the database's write-ahead log (WAL)" },
    ].flatMap(({ path, what }) => {
      const stat = statSync(path, { throwIfNoEntry: false });
      return stat === undefined ? [] : [{ path, what, dev: stat.dev, ino: stat.ino }];
    });
  }

  /** The inode of the database file as opened (names the copy a rescue makes). */
  get databaseInode(): number {
    return this.opened[0]?.ino ?? 0;
  }

  /** Which opened files the paths no longer name, described; empty when all is well. */
  check(): { path: string; what: string; now: string }[] {
    const lost: { path: string; what: string; now: string }[] = [];
    for (const file of this.opened) {
      let now: string;
      try {
        const stat = statSync(file.path, { throwIfNoEntry: false });
        if (stat !== undefined && stat.dev === file.dev && stat.ino === file.ino) continue;
        now =
          stat === undefined
            ? 'it is missing'
            : `it is now inode ${stat.ino} on device ${stat.dev}, not inode ${file.ino} on device ${file.dev}`;
      } catch (error) {
        now = `it cannot be looked at (${error instanceof Error ? error.message : String(error)})`;
      }
      lost.push({ path: file.path, what: file.what, now });
    }
    return lost;
  }
}
