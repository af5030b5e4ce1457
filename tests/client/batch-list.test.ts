/**
 * Listing batches (ListBatches, GET /v1/batches) through the TypeScript SDK and the HTTP
 * API, on a server with API keys: newest first, by state and owner, in pages; an admin
 * key lists every key's batches, a producer key only its own (another key's is
 * PERMISSION_DENIED / 403), a key scoped to queues none; GetServerInfo names the retention.
 * Changing a batch follows its owner too: only the key that created it, or an admin key, adds
 * to it or seals it; a running member adds with from_member and its lease's token whoever
 * calls, and another key holding the member's id and attempt (all GetJob shows) is refused
 * (the attacks of tasks attack5 and token19).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SeppClient } from '../../clients/typescript/src/index.ts';
import { apiCall } from '../helpers/http-api.ts';
import { registerSecret } from '../helpers/secret-log.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const keys = {
  admin: 'batch-list-admin-key-0123456789',
  etl: 'batch-list-etl-key-0123456789',
  billing: 'batch-list-billing-key-0123456789',
  scoped: 'batch-list-scoped-key-0123456789',
};

describe('listing batches', () => {
  let server: TestServer;
  const clients: Partial<Record<keyof typeof keys, SeppClient>> = {};
  const client = (name: keyof typeof keys): SeppClient => clients[name]!;
  const ids: Record<string, string> = {};

  before(async () => {
    for (const [name, key] of Object.entries(keys)) registerSecret(`${name} key`, key);
    const keyEntries = [
      ['admin', 'admin', ''],
      ['etl', 'producer', ''],
      ['billing', 'producer', ''],
      ['scoped', 'producer', 'queues = ["mine"]\n'],
    ].map(
      ([name, role, queues]) =>
        `[[grpc.api_keys]]\nname = "${name}"\nrole = "${role}"\nkey = "${keys[name as keyof typeof keys]}"\n${queues}`,
    );
    const toml = `${keyEntries.join('')}[limits]\nbatch_retention_ms = "3d"\n`;
    server = await startTestServer({ toml, http: true });
    for (const [name, apiKey] of Object.entries(keys)) {
      clients[name as keyof typeof keys] = SeppClient.connect(server.address, { apiKey });
    }
    ids.etlOpen = (await client('etl').createBatch({})).batch.id;
    ids.etlSealed = (
      await client('etl').createBatch({ jobs: [{ queue: 'bl', type: 't' }], seal: true })
    ).batch.id;
    ids.billing = (await client('billing').createBatch({})).batch.id;
  });

  after(async () => {
    for (const c of Object.values(clients)) await c.close();
    await server.dispose();
  });

  test('an admin key lists every key’s batches, newest first, by state and owner, in pages', async () => {
    const all = await client('admin').listBatches();
    assert.deepEqual(
      all.batches.map((b) => b.id),
      [ids.billing, ids.etlSealed, ids.etlOpen],
    );
    assert.deepEqual(
      all.batches.map((b) => b.owner),
      ['billing', 'etl', 'etl'],
    );
    assert.equal(all.nextPageToken, null);
    const open = await client('admin').listBatches({ state: 'open' });
    assert.deepEqual(
      open.batches.map((b) => b.id),
      [ids.billing, ids.etlOpen],
    );
    const first = await client('admin').listBatches({ owner: 'etl', pageSize: 1 });
    assert.deepEqual(
      first.batches.map((b) => b.id),
      [ids.etlSealed],
    );
    assert.ok(first.nextPageToken !== null);
    const second = await client('admin').listBatches({
      owner: 'etl',
      pageSize: 1,
      pageToken: first.nextPageToken,
    });
    assert.deepEqual(
      second.batches.map((b) => b.id),
      [ids.etlOpen],
    );
    await assert.rejects(client('admin').listBatches({ pageSize: 100_000 }), {
      name: 'SeppError',
      code: 'invalid_argument',
    });
    await assert.rejects(client('admin').listBatches({ pageToken: 'nope' }), {
      name: 'SeppError',
      code: 'invalid_argument',
    });
    const info = await client('admin').getServerInfo();
    assert.equal(info.limits.batchRetentionMs, 3 * 86_400_000);
  });

  test('a producer key lists its own batches; another key’s is refused; a scoped key none', async () => {
    const own = await client('etl').listBatches();
    assert.deepEqual(
      own.batches.map((b) => b.id),
      [ids.etlSealed, ids.etlOpen],
    );
    const sealed = await client('etl').listBatches({ owner: 'etl', state: 'sealed' });
    assert.deepEqual(
      sealed.batches.map((b) => b.id),
      [ids.etlSealed],
    );
    await assert.rejects(client('etl').listBatches({ owner: 'billing' }), {
      name: 'SeppError',
      code: 'permission_denied',
    });
    await assert.rejects(client('scoped').listBatches(), { name: 'SeppError', code: 'permission_denied' });
  });

  test('GET /v1/batches answers the same, with the same rules', async () => {
    const url = server.httpUrl;
    const all = await apiCall<{ batches: { id: string; owner: string }[]; nextPageToken: string | null }>(
      url,
      '/v1/batches?pageSize=2',
      { key: keys.admin },
    );
    assert.equal(all.status, 200, all.text);
    assert.deepEqual(
      all.json.batches.map((b) => b.id),
      [ids.billing, ids.etlSealed],
    );
    assert.ok(all.json.nextPageToken !== null);
    const rest = await apiCall<{ batches: { id: string }[]; nextPageToken: string | null }>(
      url,
      `/v1/batches?pageSize=2&pageToken=${encodeURIComponent(all.json.nextPageToken)}`,
      { key: keys.admin },
    );
    assert.deepEqual(
      rest.json.batches.map((b) => b.id),
      [ids.etlOpen],
    );
    assert.equal(rest.json.nextPageToken, null);
    const own = await apiCall<{ batches: { id: string }[] }>(url, '/v1/batches?state=open', {
      key: keys.etl,
    });
    assert.deepEqual(
      own.json.batches.map((b) => b.id),
      [ids.etlOpen],
    );
    assert.equal((await apiCall(url, '/v1/batches?owner=billing', { key: keys.etl })).status, 403);
    assert.equal((await apiCall(url, '/v1/batches', { key: keys.scoped })).status, 403);
    const bad = await apiCall(url, '/v1/batches?state=done', { key: keys.admin });
    assert.equal(bad.status, 400);
    assert.match(bad.text, /state: \\"done\\" is no batch state/);
  });

  test('only the owner or an admin adds to or seals a batch; a running member adds with fromMember', async () => {
    const { batch } = await client('etl').createBatch({ jobs: [{ queue: 'bl', type: 't' }] });
    const job = { queue: 'bl', type: 't' };
    for (const call of [
      client('billing').addToBatch(batch.id, [job]),
      client('billing').sealBatch(batch.id),
    ]) {
      await assert.rejects(call, (error: Error & { code?: string }) => {
        assert.equal(error.code, 'permission_denied');
        assert.match(error.message, new RegExp(`batch ${batch.id} was created by API key etl`));
        return true;
      });
    }
    const url = server.httpUrl;
    const add = await apiCall(url, `/v1/batches/${batch.id}/jobs`, {
      method: 'POST',
      key: keys.billing,
      body: { jobs: [job] },
    });
    assert.equal(add.status, 403, add.text);
    const seal = await apiCall(url, `/v1/batches/${batch.id}/seal`, { method: 'POST', key: keys.billing });
    assert.equal(seal.status, 403, seal.text);
    assert.equal((await client('admin').getBatch(batch.id)).batch.members, 1);
    await client('etl').addToBatch(batch.id, [job]);
    assert.equal((await client('etl').sealBatch(batch.id)).members, 2);
  });

  test('another key reading a member’s id and attempt cannot fill a sealed batch; its worker adds, it ends', async () => {
    const { batch } = await client('etl').createBatch({
      jobs: [{ queue: 'bl-fan', type: 'fan' }],
      seal: true,
    });
    const url = server.httpUrl;
    // The attack: any key reads the batch and the member's job, and adds "from" it with what it read.
    const member = (await client('billing').getBatch(batch.id)).members[0]!.jobId;
    const attack = (extra: Record<string, unknown>) =>
      apiCall(url, `/v1/batches/${batch.id}/jobs`, {
        method: 'POST',
        key: keys.billing,
        body: { jobs: [{ queue: 'bl-fan', type: 'junk' }], fromMember: member, ...extra },
      });
    const noToken = await attack({ fromMemberAttempt: 1 });
    assert.equal(noToken.status, 403, noToken.text);
    assert.match(noToken.text, /fromMemberToken: required with fromMember/);
    await assert.rejects(
      client('billing').addToBatch(batch.id, [{ queue: 'bl-fan', type: 'junk' }], { fromMember: member }),
      (error: Error & { code?: string }) => {
        assert.equal(error.code, 'permission_denied');
        // Its client knows no handler of the member: it sent no token and says why, in the SDK's
        // names (the option and the job's field the server's proto names stand for).
        assert.match(error.message, /^fromMember: member \S+ is not running on this client's server/);
        assert.match(
          error.message,
          /The server answered: fromMemberToken: required with fromMember, the leaseToken of /,
        );
        assert.doesNotMatch(error.message, /from_member|lease_token/);
        return true;
      },
    );

    // The member's own handler adds (through another key's Client: the SDK passes its lease's token),
    // while the attacker, who reads the job as it runs, adds neither with its attempt nor with a guess.
    const seen: string[] = [];
    const attacks: Awaited<ReturnType<typeof attack>>[] = [];
    let ended!: () => void;
    const done = new Promise<void>((resolve) => {
      ended = resolve;
    });
    const worker = client('admin').worker({
      queues: ['bl-fan'],
      handlers: {
        fan: async (job) => {
          registerSecret('lease token', job.leaseToken!);
          const read = await client('billing').getJob(job.id);
          assert.deepEqual([read.state, read.attempt], ['leased', job.attempt]);
          assert.ok(!JSON.stringify(read).includes(job.leaseToken!), 'GetJob never shows the token');
          attacks.push(await attack({ fromMemberAttempt: read.attempt }));
          attacks.push(await attack({ fromMemberToken: 'A'.repeat(22) }));
          await client('billing').addToBatch(job.batchId!, [{ queue: 'bl-fan', type: 'part' }], {
            fromMember: job.id,
          });
        },
        part: () => {},
      },
    });
    worker.on('completed', (job) => {
      seen.push(job.type);
      if (seen.length === 2) ended();
    });
    await done;
    await worker.close();
    assert.deepEqual(
      attacks.map((a) => a.status),
      [403, 403],
      attacks.map((a) => a.text).join('\n'),
    );
    assert.match(attacks[0]!.text, /fromMemberToken: required with fromMember/);
    assert.match(attacks[1]!.text, /fromMemberToken: not the token of member .* current lease/);
    const after = (await client('admin').getBatch(batch.id, { membersLimit: 0 })).batch;
    assert.deepEqual([after.state, after.members, after.completed], ['ended', 2, 2]);
  });

  test('a member leased over HTTP carries its token and adds with it, through any key', async () => {
    const { batch } = await client('etl').createBatch({
      jobs: [{ queue: 'bl-http', type: 'fan' }],
      seal: true,
    });
    const url = server.httpUrl;
    type Leased = { jobId: string; batchId: string | null; leaseToken: string | null };
    const reserved = await apiCall<{ jobs: Leased[] }>(url, '/v1/reserve', {
      method: 'POST',
      key: keys.admin,
      body: { queues: ['bl-http'], maxJobs: 1, waitTimeoutMs: 0 },
    });
    assert.equal(reserved.status, 200, reserved.text);
    const leased = reserved.json.jobs[0]!;
    assert.equal(leased.batchId, batch.id);
    const token = leased.leaseToken!;
    assert.match(token, /^[A-Za-z0-9_-]{22}$/);
    registerSecret('lease token', token);
    const add = (fromMemberToken: string) =>
      apiCall<{ batch: { members: number } }>(url, `/v1/batches/${batch.id}/jobs`, {
        method: 'POST',
        key: keys.billing,
        body: { jobs: [{ queue: 'bl-http', type: 'part' }], fromMember: leased.jobId, fromMemberToken },
      });
    const forged = await add(`${token.slice(1)}A`);
    assert.equal(forged.status, 403, forged.text);
    const added = await add(token);
    assert.equal(added.status, 200, added.text);
    assert.equal(added.json.batch.members, 2);
    const job = await apiCall(url, `/v1/jobs/${leased.jobId}`, { key: keys.billing });
    assert.equal(job.status, 200, job.text);
    assert.ok(!job.text.includes(token), 'GET /v1/jobs/{jobId} never shows the token');
  });
});
