/**
 * The admin UI's client-side routes (ui/src/main.tsx renders them). The
 * server answers these paths with the app's shell, index.html, so a bookmark
 * or a reload of /queues/emails works; every other path that is not a file of
 * the UI is a 404. (Answering every unknown path with the shell and 200 would
 * make typos, probes and health checks of the wrong path look like success.)
 * tests/admin/static-assets.test.ts keeps this list and the UI's in step;
 * docs/admin.md lists it as scripts/gen-admin-ui-routes-doc.ts writes it.
 */
/** The UI's route paths as written in ui/src/main.tsx (for the test that compares them). */
export const uiRoutePaths: readonly string[] = [
  '/',
  '/login',
  '/queues',
  '/queues/:name',
  '/queues/:name/settings',
  '/jobs',
  '/search',
  '/workers',
  '/jobs/:id',
  '/flows/:id',
  '/batches',
  '/batches/:id',
  '/dead-letters',
  '/schedules',
  '/schedules/:name',
  '/enqueue',
  '/audit',
  '/config',
];

/** Each path as a pattern: a `:name` segment is any one segment. */
const patterns: readonly RegExp[] = uiRoutePaths.map(
  (path) => new RegExp(`^${path.replace(/:[a-z]+/g, '[^/]+')}$`),
);

/** True when `path` (the raw request path, still percent-encoded) is one of the UI's pages. */
export function isUiRoute(path: string): boolean {
  const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  return trimmed.length <= 512 && patterns.some((re) => re.test(trimmed));
}
