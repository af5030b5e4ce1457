/**
 * Sections of a job's page that stand on their own: the progress a worker
 * last reported, the attempts that failed with their full error text, and the
 * workflow it belongs to.
 */
import { Empty, JobIdLink, StateBadge, Time } from '../components/common.tsx';
import { localTimes, shortId } from '../format.ts';
import { Link } from '../router.tsx';
import type { JobDetail as Job, JobLink } from '../types.ts';

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

function LinkTable({ links, label }: { links: JobLink[]; label: string }) {
  return (
    <div class="table-wrap">
      <table class="table table-compact" aria-label={label}>
        <tbody>
          {links.map((link) => (
            <tr key={link.id}>
              <td>
                <JobIdLink id={link.id} />
              </td>
              <td>{link.name ?? link.type ?? '—'}</td>
              <td>
                {link.state === null ? <span class="muted">swept</span> : <StateBadge state={link.state} />}
              </td>
              <td class="muted">{link.edge === 'pending' ? 'pending' : `edge ${link.edge}`}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * A job in a workflow (issue 33): the jobs it waits on, the jobs that wait on it (links to
 * each), and links to its flow's page and its batch's page. Nothing for other jobs.
 */
export function WorkflowCard({ job }: { job: Job }) {
  const dependencies = job.dependencies ?? [];
  const dependents = job.dependents ?? [];
  if (dependencies.length === 0 && dependents.length === 0 && job.batchId === undefined) return null;
  return (
    <section class="card" aria-labelledby="job-workflow">
      <h2 id="job-workflow" class="card-title">
        Workflow
      </h2>
      <p class="workflow-links">
        {(dependencies.length > 0 || dependents.length > 0) && (
          <Link href={`/flows/${job.id}`}>Show the flow</Link>
        )}
        {job.batchId !== undefined && (
          <Link href={`/batches/${job.batchId}`}>Batch {shortId(job.batchId)}</Link>
        )}
      </p>
      {dependencies.length > 0 && (
        <>
          <h3 class="card-subtitle">Waits on</h3>
          <LinkTable links={dependencies} label="jobs it waits on" />
        </>
      )}
      {dependents.length > 0 && (
        <>
          <h3 class="card-subtitle">Waited on by</h3>
          <LinkTable links={dependents} label="jobs waiting on it" />
        </>
      )}
    </section>
  );
}
