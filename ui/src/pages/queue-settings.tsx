/**
 * A queue's settings, each with where its value comes from, and (for admins)
 * the form that overrides them while the server runs. Values are typed as in
 * the config file ("30s", "4MiB", ["send"]); the server checks them with the
 * config file's rules and answers with the file's messages, which are shown
 * as they come. Overrides survive restarts until reset.
 */
import { useLayoutEffect } from 'preact/hooks';
import { can, post, seg } from '../api.ts';
import { ErrorBanner, Loading, notify, PageHeader } from '../components/common.tsx';
import { useDraft } from '../form-draft.ts';
import { fmtDuration, fmtNum } from '../format.ts';
import { useAction, useApi } from '../hooks.ts';
import { Link } from '../router.tsx';
import type { QueueInfo, Session, SettingSource, SettingValue } from '../types.ts';

/** How each source reads; the order is the precedence, lowest first. */
export function sourceLabel(source: SettingSource, queue: string): string {
  switch (source) {
    case 'default':
      return 'built-in default';
    case 'queue_defaults':
      return 'file: [queue_defaults]';
    case 'queue':
      return `file: [queues.${queue}]`;
    case 'override':
      return 'run-time override';
  }
}

export function SourceBadge({ source, queue }: { source: SettingSource; queue: string }) {
  return <span class={`badge badge-source badge-source-${source}`}>{sourceLabel(source, queue)}</span>;
}

/**
 * What a value does where the text alone does not say it: the server's
 * meaning (`no limit`, `not kept: deleted on ack`), else a duration in human
 * units beside its exact milliseconds.
 */
export function settingNote(setting: SettingValue): string | null {
  if (setting.meaning !== null) return setting.meaning;
  if (setting.key.endsWith('_ms') && typeof setting.value === 'number') {
    return `${fmtDuration(setting.value)} = ${fmtNum(setting.value)} ms`;
  }
  return null;
}

/** Where the value comes from; a value derived from another setting says so, with where its own 0 comes from. */
export function SettingSourceCell({ setting, queue }: { setting: SettingValue; queue: string }) {
  if (setting.derivedFrom === null) return <SourceBadge source={setting.source} queue={queue} />;
  return (
    <span>
      <span class="badge badge-source badge-source-derived">derived from {setting.derivedFrom}</span>{' '}
      <small class="muted">(0 from {sourceLabel(setting.source, queue)})</small>
    </span>
  );
}

/**
 * A refused save's problems by setting. The server answers with the config
 * file's messages, one per setting, "queues.NAME.KEY: what is wrong; how to
 * fix it", joined by "; ": each is shown at its field. Problems no field owns
 * (an unknown setting) are left for the banner.
 */
export function problemsBySetting(
  message: string,
  keys: readonly string[],
): { fields: Map<string, string>; rest: string[] } {
  const fields = new Map<string, string>();
  const rest: string[] = [];
  for (const part of message.split(/; (?=queues\.)/)) {
    const key = /^queues\.(?:"(?:[^"\\]|\\.)*"|[^.:\s]+)\.([a-z_]+): /.exec(part)?.[1];
    if (key !== undefined && keys.includes(key) && !fields.has(key)) fields.set(key, part);
    else rest.push(part);
  }
  return { fields, rest };
}

export function QueueSettings({ name, session }: { name: string; session: Session }) {
  const { data: queue, error, reload } = useApi<QueueInfo>(`/api/v1/queues/${seg(name)}`);
  // A fresh copy of the queue starts the form from its values again.
  const [edits, setEdits] = useDraft<Record<string, string>>({}, queue);
  const [resets, setResets] = useDraft<ReadonlySet<string>>(new Set(), queue);
  const action = useAction();
  const editable = can(session, 'admin');
  const refused =
    action.error === null || queue === null
      ? null
      : problemsBySetting(
          action.error.message,
          queue.settingValues.map((s) => s.key),
        );
  // A refused save moves the focus to the first field the server refused, where its message is.
  const firstRefused = refused === null ? undefined : [...refused.fields.keys()][0];
  // In the draw that shows the message (a layout effect): a plain effect ran a frame later, so for a
  // frame the message showed with the focus still on the button.
  useLayoutEffect(() => {
    if (firstRefused !== undefined) document.getElementById(`setting-${firstRefused}`)?.focus();
  }, [action.error, firstRefused]);

  const submit = async (event: Event) => {
    event.preventDefault();
    if (queue === null) return;
    const set = Object.fromEntries(
      Object.entries(edits).filter(
        ([key, text]) => text !== queue.settingValues.find((s) => s.key === key)?.text,
      ),
    );
    const reset = [...resets].filter((key) => !(key in set));
    if (Object.keys(set).length === 0 && reset.length === 0) {
      notify('Nothing to save: no setting was changed.');
      return;
    }
    const result = await action.run(() =>
      post<QueueInfo>(`/api/v1/queues/${seg(name)}/settings`, {
        ...(Object.keys(set).length === 0 ? {} : { set }),
        ...(reset.length === 0 ? {} : { reset }),
      }),
    );
    if (result !== undefined) {
      notify(`Saved ${[...Object.keys(set), ...reset].join(', ')} on ${name}.`);
      reload();
    }
  };

  return (
    <>
      <PageHeader title={`Settings of ${name}`} />
      <p class="breadcrumbs">
        <Link href="/queues">Queues</Link> / <Link href={`/queues/${seg(name)}`}>{name}</Link> / settings
      </p>
      <p class="muted">
        Each setting comes from, lowest precedence first: the built-in default, the config file's{' '}
        <code>[queue_defaults]</code>, its <code>[queues.{name}]</code>, and a run-time override set here (or
        with <code>sepp queue set</code>). Overrides apply from the next lease or enqueue, survive restarts,
        and are written to the audit log; reset one to go back to the file's value.
      </p>
      <ErrorBanner error={error} />
      {refused !== null && (refused.rest.length > 0 || refused.fields.size === 0) && (
        <ErrorBanner error={action.error} onDismiss={action.clear} />
      )}
      {refused !== null && refused.fields.size > 0 && (
        <div class="banner banner-error">
          <span>
            <strong>Not saved:</strong>{' '}
            {refused.fields.size === 1 ? '1 setting was' : `${refused.fields.size} settings were`} refused (
            {[...refused.fields.keys()].join(', ')}); the message is under each. Nothing changed.
          </span>
        </div>
      )}
      {queue === null ? (
        error === null && <Loading />
      ) : (
        <form class="card" onSubmit={submit} aria-labelledby="settings-form-title">
          <h2 id="settings-form-title" class="card-title">
            Settings
          </h2>
          <div class="table-wrap">
            <table class="table table-compact table-stack table-settings">
              <thead>
                <tr>
                  <th scope="col">Setting</th>
                  <th scope="col">Value</th>
                  <th scope="col">Source</th>
                  <th scope="col">File value</th>
                  {editable && <th scope="col">Reset</th>}
                </tr>
              </thead>
              <tbody>
                {queue.settingValues.map((setting) => {
                  const note = settingNote(setting);
                  const problem = refused?.fields.get(setting.key);
                  return (
                    <tr key={setting.key}>
                      <th scope="row">
                        <label for={`setting-${setting.key}`}>
                          <code>{setting.key}</code>
                        </label>
                      </th>
                      <td data-label="Value">
                        {/* One box, so a phone's stacked row keeps the note under the value. */}
                        <div>
                          {editable ? (
                            <input
                              id={`setting-${setting.key}`}
                              name={setting.key}
                              class={
                                problem !== undefined
                                  ? 'mono invalid'
                                  : edits[setting.key] !== undefined && edits[setting.key] !== setting.text
                                    ? 'mono edited'
                                    : 'mono'
                              }
                              aria-invalid={problem !== undefined}
                              aria-describedby={`${problem === undefined ? '' : `problem-${setting.key} `}${note === null ? '' : `note-${setting.key} `}source-${setting.key}`}
                              value={edits[setting.key] ?? setting.text}
                              disabled={resets.has(setting.key)}
                              onInput={(e) => setEdits({ ...edits, [setting.key]: e.currentTarget.value })}
                            />
                          ) : (
                            <code>{setting.text}</code>
                          )}
                          {problem !== undefined && (
                            <div class="field-error" id={`problem-${setting.key}`} role="alert">
                              {problem}
                            </div>
                          )}
                          {note !== null && (
                            <div class="muted setting-note" id={`note-${setting.key}`}>
                              <small>{note}</small>
                            </div>
                          )}
                        </div>
                      </td>
                      <td id={`source-${setting.key}`} data-label="Source">
                        <SettingSourceCell setting={setting} queue={name} />
                      </td>
                      <td data-label="File value" class={setting.source === 'override' ? '' : 'hide-narrow'}>
                        {setting.source === 'override' ? <code>{setting.fileText}</code> : ''}
                      </td>
                      {editable && (
                        <td data-label="Reset" class={setting.source === 'override' ? '' : 'hide-narrow'}>
                          {setting.source === 'override' && (
                            <label>
                              <input
                                type="checkbox"
                                checked={resets.has(setting.key)}
                                onChange={(e) => {
                                  const next = new Set(resets);
                                  if (e.currentTarget.checked) next.add(setting.key);
                                  else next.delete(setting.key);
                                  setResets(next);
                                }}
                              />{' '}
                              <span class="sr-only">reset {setting.key} to</span> {setting.fileText}
                            </label>
                          )}
                        </td>
                      )}
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
          {editable ? (
            <div class="form-actions">
              <button type="submit" class="btn btn-primary" disabled={action.busy}>
                {action.busy ? 'Saving…' : 'Save changes'}
              </button>
              <button
                type="button"
                class="btn"
                onClick={() => {
                  setEdits({});
                  setResets(new Set());
                  action.clear();
                }}
              >
                Undo edits
              </button>
            </div>
          ) : (
            <p class="muted">Only an admin can change settings.</p>
          )}
        </form>
      )}
    </>
  );
}
