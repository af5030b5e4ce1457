import {
  describePostgresSettings,
  type PostgresCluster,
  startPostgres,
} from '../../tests/helpers/postgres.ts';

/**
 * The PostgreSQL server under a PostgreSQL peer (pg-boss, graphile-worker): a fresh
 * cluster per start from tests/helpers/postgres.ts, so every such peer runs on the same
 * server settings (`postgresSettings`), which the report prints with each row.
 */
export class PostgresPeerServer {
  private cluster: PostgresCluster | undefined;
  /** `15.20`; kept after stop(), since the report reads labels once the server is gone. */
  version = '?';

  async start(): Promise<PostgresCluster> {
    const cluster = await startPostgres();
    this.cluster = cluster;
    this.version = cluster.serverVersion.split(' ')[0] ?? '?';
    return cluster;
  }

  /** The running cluster; throws when it is not started. */
  get running(): PostgresCluster {
    if (this.cluster === undefined) throw new Error('PostgreSQL is not started');
    return this.cluster;
  }

  /** The postmaster: the harness counts its backends' CPU as its descendants. */
  pids(): number[] {
    const pid = this.cluster?.pid();
    return pid === undefined ? [] : [pid];
  }

  async stop(): Promise<void> {
    await this.cluster?.close();
    this.cluster = undefined;
  }

  /** `PostgreSQL 15.20 (fsync=on synchronous_commit=on …)`. */
  describe(): string {
    return `PostgreSQL ${this.version} (${describePostgresSettings()})`;
  }
}
