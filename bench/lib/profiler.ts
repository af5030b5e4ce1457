import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

/** CPU profiles of one phase at a time (the whole process's would be mostly start-up); open in Chrome DevTools. */
export class Profiler {
  private readonly session = new Session();

  /** `intervalUs`: the sampling interval (V8's default 1,000 µs; finer shows parts of a few µs per job). */
  async start(intervalUs?: number): Promise<void> {
    this.session.connect();
    await this.post('Profiler.enable');
    if (intervalUs !== undefined) await this.post('Profiler.setSamplingInterval', { interval: intervalUs });
    await this.post('Profiler.start');
  }

  async stop(path: string): Promise<void> {
    const { profile } = (await this.post('Profiler.stop')) as { profile: unknown };
    writeFileSync(path, JSON.stringify(profile));
    this.session.disconnect();
  }

  private post(method: string, params?: object): Promise<unknown> {
    return new Promise((resolve, reject) =>
      this.session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))),
    );
  }
}
