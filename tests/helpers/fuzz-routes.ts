/**
 * The HTTP fuzzers' cases: a route drawn at random, then a case of that route. Each route's
 * case generator is made once, on its first draw: the body generators build their fixed
 * oversize bodies (a thousand keys, 100,000 brackets) when made, which made per case was most
 * of a fuzz loop's CPU (2026-12-06). The cases drawn are the same.
 */
import fc from 'fast-check';

/** `routes()`: the routes when the first case is drawn (a file's `before` reads them). */
export function casesOfRoutes<R, C>(
  routes: () => readonly R[],
  caseOf: (route: R) => fc.Arbitrary<C>,
): fc.Arbitrary<C> {
  const made = new Map<R, fc.Arbitrary<C>>();
  return fc.integer({ min: 0, max: 10_000 }).chain((i) => {
    const all = routes();
    const route = all[i % all.length] as R;
    let cases = made.get(route);
    if (cases === undefined) {
      cases = caseOf(route);
      made.set(route, cases);
    }
    return cases;
  });
}
