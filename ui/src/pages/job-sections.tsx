/**
 * Sections of a job's page that stand on their own: the progress a worker
 * last reported, and the attempts that failed with their full error text.
 */
import { Empty, Time } from '../components/common.tsx';
import { localTimes } from '../format.ts';
import type { JobDetail as Job } from '../types.ts';

export function ProgressCard({ progress }: { progress: NonNullable<Job['progress']> }) {
  return (
    <section class="card" aria-labelledby="job-progress">
      <h2 id="job-progress" class="card-title">
        Progress{' '}
        <span class="muted">
          reported <Time ms={progress.atMs} past />
        </span>
      </h2>
      {progress.percent !== null && (
        <div class="progress">
          <div
            class="progress-bar"
            role="progressbar"
            aria-valuemin={0}
            aria-valuemax={100}
            aria-valuenow={progress.percent}
          >
            <span style={{ width: `${progress.percent}%` }} />
          </div>
          <strong>{Math.round(progress.percent * 10) / 10}%</strong>
        </div>
      )}
      {progress.json !== null && <pre class="payload">{prettyJson(progress.json)}</pre>}
    </section>
  );
}

function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

export function AttemptErrors({ errors }: { errors: Job['errors'] }) {
  return (
    <section class="card" aria-labelledby="job-errors">
      <h2 id="job-errors" class="card-title">
        Attempts with errors
      </h2>
      {errors.length === 0 ? (
        <Empty title="No failed attempts" />
      ) : (
        <div class="table-wrap">
          <table class="table table-stack">
            <thead>
              <tr>
                <th scope="col" class="num">
                  Attempt
                </th>
                <th scope="col">Ended at</th>
                <th scope="col">Error</th>
              </tr>
            </thead>
            <tbody>
              {errors.map((e) => (
                <tr key={`${e.attempt} ${e.atMs}`}>
                  <td data-label="Attempt" class="num">
                    {e.attempt}
                  </td>
                  <td data-label="Ended at" class="nowrap">
                    <Time ms={e.atMs} past />
                  </td>
                  <td data-label="Error">
                    {e.stoppedByCancel && <span class="badge badge-cancelled">stopped by the cancel</span>}
                    {e.errorClass !== null && (
                      <span class="badge badge-dead" title="the class of the error the worker's code threw">
                        {e.errorClass}
                      </span>
                    )}
                    <pre
                      class={e.stoppedByCancel ? 'error-text error-text-cancel' : 'error-text'}
                      title={e.error}
                    >
                      {localTimes(e.error)}
                    </pre>
                    {e.stack !== null && (
                      <details class="error-stack">
                        <summary>Stack of attempt {e.attempt}</summary>
                        <pre class="error-text">{e.stack}</pre>
                      </details>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
