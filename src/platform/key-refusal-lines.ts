/**
 * Who is behind refused answers: a key whose clients do not read their answers has its calls
 * refused (RESOURCE_EXHAUSTED, HTTP 429) and its Reserve answers given back, which only that
 * key's own clients see. The operator is told too, by one line per key: the first refusal or give-back of
 * a run at once, then at most one line per key per `everyMs`, each standing for what happened
 * since the line before (a flood is one line a minute per key, not one a call). What one
 * synchronous run does — a Reserve's answer refused, then its jobs given back — is one line.
 * The key is named by its name, never its token. At most `maxKeys` keys are followed; past that
 * they are all forgotten (the next of each is told at once again): bounded, whatever the names.
 */

/** What a key's clients were refused since the line before. */
export interface KeyRefusals {
  /** Calls or requests refused, before they ran or for their answer. */
  readonly refused: number;
  /** Reserve answers not sent (or not whole) whose leased jobs were given back. */
  readonly givenBack: number;
}

interface KeyRun {
  lastLineMs: number | undefined;
  refused: number;
  givenBack: number;
  /** A line is on its way (told once the current synchronous run is over). */
  due: boolean;
}

export class KeyRefusalLines {
  private readonly runs = new Map<string, KeyRun>();

  constructor(
    private readonly tell: (key: string, since: KeyRefusals) => void,
    /** The engine's clock. */
    private readonly nowMs: () => number,
    private readonly everyMs = 60_000,
    private readonly maxKeys = 1_000,
  ) {}

  /** A call or request of `key` was refused for its answers not yet read. */
  refused(key: string): void {
    this.occurred(key, 1, 0);
  }

  /** A Reserve answer to `key` was not sent (or not whole): its leased jobs were given back. */
  givenBack(key: string): void {
    this.occurred(key, 0, 1);
  }

  private occurred(key: string, refused: number, givenBack: number): void {
    let run = this.runs.get(key);
    if (run === undefined) {
      if (this.runs.size >= this.maxKeys) this.runs.clear();
      run = { lastLineMs: undefined, refused: 0, givenBack: 0, due: false };
      this.runs.set(key, run);
    }
    run.refused += refused;
    run.givenBack += givenBack;
    if (run.due) return;
    const nowMs = this.nowMs();
    if (run.lastLineMs !== undefined && nowMs - run.lastLineMs < this.everyMs) return;
    run.lastLineMs = nowMs;
    run.due = true;
    const line = run;
    queueMicrotask(() => {
      line.due = false;
      const since = { refused: line.refused, givenBack: line.givenBack };
      line.refused = 0;
      line.givenBack = 0;
      this.tell(key, since);
    });
  }
}
