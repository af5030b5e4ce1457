/** bench/pages-per-commit.ts: the evidence docs/performance.md quotes comes from a tool that works. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';

test('pages-per-commit attributes every page of each hot-path commit to a b-tree', async () => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', 'bench/pages-per-commit.ts', '--backlog', '300', '--repeat', '3'],
    { timeout: 120_000 },
  );
  const rows = new Map(
    stdout
      .split('\n')
      .filter((line) => line.startsWith('| '))
      .map((line) => {
        const cells = line.split('|').map((cell) => cell.trim().replaceAll('**', ''));
        return [cells[1] ?? '', cells.slice(2, -1)] as const;
      }),
  );
  const operations = rows.get('b-tree (page type)');
  assert.deepEqual(operations, [
    'enqueue 1',
    'enqueue batch of 50',
    'lease 1',
    'ack 1',
    'nack 1 (backoff: to scheduled)',
    'lease 50 + ack 50 (one commit)',
  ]);
  assert.deepEqual(rows.get('commits measured'), ['3', '3', '3', '3', '3', '3'], 'one commit per operation');
  const lease = operations.indexOf('lease 1');
  // A lease leaves jobs_ready and enters jobs_leased; an enqueue never touches jobs_leased.
  assert.notEqual(rows.get('jobs_ready (leaf)')?.[lease], '·');
  assert.notEqual(rows.get('jobs_leased (leaf)')?.[lease], '·');
  assert.equal(rows.get('jobs_leased (leaf)')?.[0], '·');
  // Every frame is attributed: the per-b-tree cells add up to the frames per commit.
  const frames = rows.get('WAL frames per commit') ?? [];
  operations.forEach((_, i) => {
    let sum = 0;
    for (const [name, cells] of rows) {
      if (name.includes('(') && name !== 'b-tree (page type)') sum += Number(cells[i] === '·' ? 0 : cells[i]);
    }
    assert.ok(Math.abs(sum - Number(frames[i])) < 0.02, `${operations[i]}: ${sum} vs ${frames[i]}`);
  });
});
