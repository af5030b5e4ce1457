import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

/** CPU profiles of one phase at a time (the whole process's would be mostly start-up); open in Chrome DevTools. */
export class Profiler {
  private readonly session = new Session();

  async start(): Promise<void> {
    this.session.connect();
    await this.post('Profiler.enable');
    await this.post('Profiler.start');
  }

  async stop(path: string): Promise<void> {
    const { profile } = (await this.post('Profiler.stop')) as { profile: unknown };
    writeFileSync(path, JSON.stringify(profile));
    this.session.disconnect();
  }

  private post(method: string): Promise<unknown> {
    return new Promise((resolve, reject) =>
      this.session.post(method, (error, result) => (error ? reject(error) : resolve(result))),
    );
  }
}
