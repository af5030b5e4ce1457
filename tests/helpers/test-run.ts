/**
 * What scripts/run-tests.mjs tells each test file's process: the bundle of the
 * server and CLI it built once for the whole run, and the file's tier.
 */

/**
 * `node build.mjs --bundle-only`'s sepp.cjs, built once per run and used by every
 * test that runs `sepp` (it starts several times faster than the sources under
 * tsx). Undefined when a file runs on its own with `node --test`: then the
 * helpers run the sources.
 */
export const runBundle: string | undefined = process.env.SEPP_TEST_BUNDLE || undefined;

/**
 * Refuses to start `what` in a fast-tier file (scripts/test-tiers.mjs): the fast
 * tier starts no process and no browser, so a file that starts to is moved to the
 * system tier there, with what it starts, instead of slowing the inner loop.
 */
export function startsProcess(what: string): void {
  // A run on the PostgreSQL store (SEPP_TEST_STORE=postgres, test-store.ts) asked for its cluster.
  if (process.env.SEPP_TEST_TIER === 'fast' && process.env.SEPP_TEST_STORE !== 'postgres') {
    throw new Error(
      `this file starts ${what}, which the fast tier never does: list it in scripts/test-tiers.mjs ` +
        'with what it starts (the system tier)',
    );
  }
}
