/**
 * A throwaway PostgreSQL cluster for the Python client's tests (clients/python/tests/conftest.py,
 * `postgres_cluster`), made by the same helper the TypeScript tests use (postgres.ts): it starts
 * one with a database of its own, prints one line of JSON — `url` (without the password),
 * `passwordFile`, `database` — and closes it (every file removed) when its stdin ends, as it
 * does when the pytest process that started it exits, however it exits.
 */
import { startPostgres } from './postgres.ts';

const cluster = await startPostgres();
const database = await cluster.createDatabase('py');
const close = () => {
  void cluster.close().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
};
process.stdin.on('end', close);
process.stdin.resume();
console.log(
  JSON.stringify({ url: cluster.urlWithoutPassword(database), passwordFile: cluster.passwordFile, database }),
);
