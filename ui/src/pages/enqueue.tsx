/** Enqueue one job by hand: queue, type, payload (JSON checked before sending), and the common options. */
import { useState } from 'preact/hooks';
import { ApiError, post, seg } from '../api.ts';
import { ErrorBanner, notify, PageHeader } from '../components/common.tsx';
import { useAction } from '../hooks.ts';
import { useQueues } from '../queues-data.ts';
import { Link, useLocation } from '../router.tsx';

const newQueue = '\u0000new';

const contentTypes = ['application/json', 'text/plain; charset=utf-8'];

export function Enqueue() {
  const { params } = useLocation();
  const queues = useQueues();
  const [chosen, setChosen] = useState(params.get('queue') ?? '');
  const [newName, setNewName] = useState('');
  // With no queue yet, the form starts on a new one.
  const creating =
    chosen === newQueue || (chosen === '' && queues.data !== null && queues.names.length === 0);
  const queue = creating ? newName : chosen || (queues.names[0] ?? '');
  const [type, setType] = useState('');
  const [contentType, setContentType] = useState(contentTypes[0]!);
  const [payload, setPayload] = useState('{\n  \n}');
  const [priority, setPriority] = useState('0');
  const [delaySeconds, setDelaySeconds] = useState('');
  const [maxAttempts, setMaxAttempts] = useState('');
  const [idempotencyKey, setIdempotencyKey] = useState('');
  const [group, setGroup] = useState('');
  const [metadata, setMetadata] = useState('');
  const [created, setCreated] = useState<{ jobId: string; deduplicated: boolean } | null>(null);
  const action = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    setCreated(null);
    const result = await action.run(async () => {
      if (contentType === 'application/json') {
        try {
          JSON.parse(payload);
        } catch {
          throw new ApiError(
            400,
            'invalid_argument',
            'the payload is not valid JSON; fix it or choose text/plain',
          );
        }
      }
      const meta: Record<string, string> = {};
      for (const line of metadata.split('\n')) {
        if (line.trim() === '') continue;
        const at = line.indexOf('=');
        if (at <= 0) throw new ApiError(400, 'invalid_argument', `metadata line "${line}" must be key=value`);
        meta[line.slice(0, at).trim()] = line.slice(at + 1).trim();
      }
      const number = (text: string) => (text.trim() === '' ? undefined : Number(text));
      const delay = number(delaySeconds);
      return post<{ jobId: string; deduplicated: boolean }>(`/api/v1/queues/${seg(queue.trim())}/jobs`, {
        type: type.trim(),
        payload,
        contentType,
        priority: number(priority),
        ...(delay === undefined ? {} : { delayMs: Math.round(delay * 1000) }),
        maxAttempts: number(maxAttempts),
        ...(idempotencyKey.trim() === '' ? {} : { idempotencyKey: idempotencyKey.trim() }),
        ...(group.trim() === '' ? {} : { group: group.trim() }),
        ...(Object.keys(meta).length === 0 ? {} : { metadata: meta }),
      });
    });
    if (result !== undefined) {
      setCreated(result);
      notify(result.deduplicated ? 'Duplicate: the key names an existing job.' : 'Job enqueued.');
    }
  };

  return (
    <>
      <PageHeader title="Enqueue a job" />
      {/* A submit the browser blocks (a required field left empty) never reaches submit(): the
          result of the one before must not stay on screen as if it were this one's. */}
      <form class="card form" onSubmit={submit} onInvalidCapture={() => setCreated(null)}>
        <div class="form-grid">
          <div class="field">
            <label for="enq-queue">Queue</label>
            <select
              id="enq-queue"
              value={creating ? newQueue : queue}
              onChange={(e) => setChosen(e.currentTarget.value)}
            >
              {queue !== '' && !creating && !queues.names.includes(queue) && (
                <option value={queue}>{queue} (no such queue yet)</option>
              )}
              {queues.names.map((n) => (
                <option key={n} value={n}>
                  {n}
                </option>
              ))}
              <option value={newQueue}>New queue…</option>
            </select>
          </div>
          {creating && (
            <div class="field">
              <label for="enq-new-queue">New queue name</label>
              <input
                id="enq-new-queue"
                required
                value={newName}
                onInput={(e) => setNewName(e.currentTarget.value)}
                placeholder="emails"
                autocomplete="off"
              />
            </div>
          )}
          <div class="field">
            <label for="enq-type">Job type</label>
            <input
              id="enq-type"
              required
              value={type}
              onInput={(e) => setType(e.currentTarget.value)}
              placeholder="send_welcome"
              autocomplete="off"
            />
          </div>
          <div class="field">
            <label for="enq-content-type">Content type</label>
            <select
              id="enq-content-type"
              value={contentType}
              onChange={(e) => setContentType(e.currentTarget.value)}
            >
              {contentTypes.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          </div>
          <div class="field">
            <label for="enq-priority">Priority (0–9, 9 first)</label>
            <input
              id="enq-priority"
              type="number"
              min={0}
              max={9}
              value={priority}
              onInput={(e) => setPriority(e.currentTarget.value)}
            />
          </div>
          <div class="field">
            <label for="enq-delay">Delay (seconds)</label>
            <input
              id="enq-delay"
              type="number"
              min={0}
              step="any"
              value={delaySeconds}
              onInput={(e) => setDelaySeconds(e.currentTarget.value)}
              placeholder="run now"
            />
          </div>
          <div class="field">
            <label for="enq-attempts">Max attempts</label>
            <input
              id="enq-attempts"
              type="number"
              min={1}
              value={maxAttempts}
              onInput={(e) => setMaxAttempts(e.currentTarget.value)}
              placeholder="queue default"
            />
          </div>
          <div class="field field-wide">
            <label for="enq-key">Idempotency key</label>
            <input
              id="enq-key"
              value={idempotencyKey}
              onInput={(e) => setIdempotencyKey(e.currentTarget.value)}
              placeholder="optional"
              autocomplete="off"
            />
          </div>
          <div class="field field-wide">
            <label for="enq-group">Group</label>
            <input
              id="enq-group"
              value={group}
              onInput={(e) => setGroup(e.currentTarget.value)}
              placeholder="optional: a tenant or customer; groups take turns"
              autocomplete="off"
            />
          </div>
        </div>
        <div class="field">
          <label for="enq-payload">Payload</label>
          <textarea
            id="enq-payload"
            rows={8}
            class="mono"
            spellcheck={false}
            value={payload}
            onInput={(e) => setPayload(e.currentTarget.value)}
          />
        </div>
        <div class="field">
          <label for="enq-metadata">Metadata (one key=value per line)</label>
          <textarea
            id="enq-metadata"
            rows={3}
            class="mono"
            spellcheck={false}
            value={metadata}
            onInput={(e) => setMetadata(e.currentTarget.value)}
            placeholder="tenant=acme"
          />
        </div>
        <ErrorBanner error={action.error} onDismiss={action.clear} />
        {created && (
          <div class="banner banner-success" role="status">
            {created.deduplicated ? 'Already enqueued with this key: ' : 'Enqueued job '}
            <Link href={`/jobs/${created.jobId}`} class="mono">
              {created.jobId}
            </Link>
          </div>
        )}
        <div class="form-actions">
          <button type="submit" class="btn btn-primary" disabled={action.busy}>
            {action.busy ? 'Enqueueing…' : 'Enqueue'}
          </button>
        </div>
      </form>
    </>
  );
}
