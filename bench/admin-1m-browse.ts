/**
 * The admin endpoints of issue 21, for bench/admin-1m.ts: job lists across
 * queues and states with filters, the search box, the workers list and the
 * dashboard's windows. Kept apart so admin-1m.ts stays one readable file.
 */
type Call = (method: string, path: string, body?: unknown) => Promise<{ status: number; json: unknown }>;
type Measure = (
  route: string,
  label: string,
  n: number,
  request: (i: number) => Promise<{ status: number }>,
) => Promise<void>;

interface Page {
  items: { id: string; idempotencyKey: string | null }[];
  nextCursor: string | null;
  prevCursor: string | null;
  scanned: number | null;
}

export async function measureBrowse(
  measure: Measure,
  call: Call,
  n: number,
  queueNames: readonly string[],
): Promise<void> {
  const page = async (path: string) => (await call('GET', path)).json as Page;
  const states = ['ready', 'scheduled', 'leased', 'dead', 'completed', 'retrying'] as const;
  await measure('GET /api/v1/overview', 'window 24h', n, () => call('GET', '/api/v1/overview?window=24h'));
  await measure('GET /api/v1/jobs', 'all queues, any state', n, () => call('GET', '/api/v1/jobs?limit=50'));
  await measure('GET /api/v1/jobs', 'all queues, each state', n, (i) =>
    call('GET', `/api/v1/jobs?state=${states[i % states.length]}&limit=50`),
  );
  await measure('GET /api/v1/jobs', 'one queue, each state', n, (i) =>
    call(
      'GET',
      `/api/v1/jobs?queue=${queueNames[i % queueNames.length]}&state=${states[i % states.length]}&limit=50`,
    ),
  );
  await measure('GET /api/v1/jobs', 'scheduled by due, newest first', n, (i) =>
    call('GET', `/api/v1/jobs?state=scheduled&order=newest_first&queue=${i % 2 ? 'emails' : ''}&limit=50`),
  );
  await measure('GET /api/v1/jobs', 'type prefix', n, () => call('GET', '/api/v1/jobs?type=send_&limit=50'));
  let next: string | null = null;
  await measure('GET /api/v1/jobs', 'following nextCursor, all queues', n, async () => {
    const reply = await call('GET', `/api/v1/jobs?state=ready&limit=50${next ? `&cursor=${next}` : ''}`);
    next = (reply.json as Page).nextCursor;
    return reply;
  });
  const deep = await page(`/api/v1/jobs?state=ready&limit=50${next ? `&cursor=${next}` : ''}`);
  await measure('GET /api/v1/jobs', 'prevCursor (page back)', n, () =>
    call('GET', `/api/v1/jobs?state=ready&limit=50&cursor=${deep.prevCursor}`),
  );
  await measure('GET /api/v1/jobs', 'error text, matching (dead)', n, () =>
    call('GET', '/api/v1/jobs?state=dead&error=HTTP%20500&limit=50'),
  );
  await measure('GET /api/v1/jobs', 'error text, matching nothing (budget)', n, () =>
    call('GET', '/api/v1/jobs?error=no%20such%20text&limit=50'),
  );
  await measure('GET /api/v1/jobs', 'metadata tenant=t7', n, () =>
    call('GET', '/api/v1/jobs?queue=emails&state=ready&meta=tenant%3Dt7&limit=50'),
  );
  // Age (issue 36): enqueued before the middle of the fill, as the list, its count and the bulk dry run take it.
  type Dated = { items: { enqueuedAtMs: number }[] };
  const oldest = ((await call('GET', '/api/v1/jobs?limit=1')).json as Dated).items[0]?.enqueuedAtMs ?? 0;
  const newest =
    ((await call('GET', '/api/v1/jobs?limit=1&order=newest_first')).json as Dated).items[0]?.enqueuedAtMs ??
    0;
  const middle = Math.round((oldest + newest) / 2);
  await measure('GET /api/v1/jobs', 'age: enqueued before the middle, oldest first', n, () =>
    call('GET', `/api/v1/jobs?state=ready&enqueuedBeforeMs=${middle}&limit=50`),
  );
  await measure('GET /api/v1/jobs', 'age: before the middle, newest first (budget)', n, () =>
    call('GET', `/api/v1/jobs?state=ready&enqueuedBeforeMs=${middle}&order=newest_first&limit=50`),
  );
  await measure('GET /api/v1/jobs-count', 'age: before the middle, ready', Math.min(n, 20), () =>
    call('GET', `/api/v1/jobs-count?state=ready&enqueuedBeforeMs=${middle}`),
  );
  await measure('POST /api/v1/bulk/requeue', 'dry run, age: dead before the middle', Math.min(n, 20), () =>
    call('POST', '/api/v1/bulk/requeue', { state: 'dead', enqueuedBeforeMs: middle, dryRun: true }),
  );
  await measure('GET /api/v1/queues/{queue}/dead-letters', 'age: before the middle', n, () =>
    call('GET', `/api/v1/queues/emails/dead-letters?enqueuedBeforeMs=${middle}&limit=50`),
  );
  const some = await page('/api/v1/jobs?queue=webhooks&state=ready&limit=200');
  const ids = some.items.map((j) => j.id);
  await measure('GET /api/v1/search', 'full id', n, (i) =>
    call('GET', `/api/v1/search?q=${ids[i % ids.length]}`),
  );
  await measure('GET /api/v1/search', 'start of an id', n, (i) =>
    call('GET', `/api/v1/search?q=${ids[i % ids.length]!.slice(0, 18)}`),
  );
  await measure('GET /api/v1/search', 'end of an id (newest 200,000 ids)', 50, (i) =>
    call('GET', `/api/v1/search?q=${encodeURIComponent(`…${ids[i % ids.length]!.slice(-8)}`)}`),
  );
  await measure('GET /api/v1/search', 'idempotency key', n, (i) =>
    call('GET', `/api/v1/search?q=emails-key-${42 + 100 * (i % 80)}`),
  );
  await measure('GET /api/v1/workers', 'leases of 80,000 jobs', n, () => call('GET', '/api/v1/workers'));
  const leased = await page('/api/v1/jobs?state=leased&limit=200');
  await measure('POST /api/v1/jobs/{id}/release-lease', '', Math.min(n, leased.items.length), (i) =>
    call('POST', `/api/v1/jobs/${leased.items[i]!.id}/release-lease`, {}),
  );
}
