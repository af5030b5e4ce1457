// Types for the parts of `fivebeans` (a plain-JavaScript beanstalkd client) the benchmark uses.
// Callbacks get `(null, ...results)` on success and the server's error word (e.g.
// `TIMED_OUT`, `NOT_FOUND`) or a socket Error on failure.
declare module 'fivebeans' {
  import type { EventEmitter } from 'node:events';

  type Callback<T extends unknown[]> = (err: string | Error | null, ...results: T) => void;

  class FiveBeansClient extends EventEmitter {
    constructor(host?: string, port?: number);
    connect(): void;
    end(): void;
    use(tube: string, cb: Callback<[string]>): void;
    watch(tube: string, cb: Callback<[string]>): void;
    ignore(tube: string, cb: Callback<[string]>): void;
    put(
      priority: number,
      delaySeconds: number,
      ttrSeconds: number,
      payload: Buffer,
      cb: Callback<[string]>,
    ): void;
    reserve_with_timeout(timeoutSeconds: number, cb: Callback<[string, Buffer]>): void;
    destroy(jobId: string, cb: Callback<[]>): void;
  }

  const fivebeans: { client: typeof FiveBeansClient };
  export default fivebeans;
}
