/**
 * "Change group" on a job's page: moves a waiting (scheduled or ready) job to
 * another group, or out of its group when the field is left empty, through the
 * job's update call (audited on the server). A leased or finished job cannot
 * be changed, so the button is only offered for waiting jobs; the server
 * refuses the rest anyway. Failures show in the page's own error banner
 * through the `action` the page passes in.
 */
import { useState } from 'preact/hooks';
import { post, seg } from '../api.ts';
import { shortId } from '../format.ts';
import type { useAction } from '../hooks.ts';
import type { JobDetail } from '../types.ts';
import { notify } from './common.tsx';
import { ConfirmDialog } from './confirm-dialog.tsx';

/** Whether a job's group can be changed: it waits (not leased, not finished). */
export function canChangeGroup(job: JobDetail): boolean {
  return job.state === 'scheduled' || job.state === 'ready';
}

export function ChangeGroup({
  job,
  action,
  onChanged,
}: {
  job: JobDetail;
  action: ReturnType<typeof useAction>;
  onChanged(): void;
}) {
  const [open, setOpen] = useState(false);
  const [group, setGroup] = useState('');
  // Open, the dialog stays even if the job was leased meanwhile: the server's refusal then says why.
  if (!canChangeGroup(job) && !open) return null;

  const save = async () => {
    const next = group.trim();
    const result = await action.run(() =>
      post(`/api/v1/jobs/${seg(job.id)}/update`, { group: next === '' ? null : next }),
    );
    setOpen(false);
    if (result === undefined) return;
    notify(
      next === ''
        ? `Job ${shortId(job.id)} has no group now.`
        : `Job ${shortId(job.id)} moved to group ${next}.`,
    );
    onChanged();
  };

  return (
    <>
      <button
        type="button"
        class="btn btn-small btn-primary"
        onClick={() => {
          action.clear();
          setGroup(job.group ?? '');
          setOpen(true);
        }}
      >
        Change group
      </button>
      <ConfirmDialog
        open={open}
        title="Change the group"
        confirmLabel="Change group"
        danger={false}
        dismissLabel="Cancel"
        busy={action.busy}
        onCancel={() => setOpen(false)}
        onConfirm={save}
      >
        <p>
          Leases take turns across a queue's groups, and the queue's per-group limits apply to the group the
          job is in. Leave the field empty to take the job out of its group.
        </p>
        <div class="field">
          <label for="job-group">Group</label>
          <input
            id="job-group"
            value={group}
            placeholder="no group"
            maxLength={256}
            onInput={(e) => setGroup(e.currentTarget.value)}
          />
        </div>
      </ConfirmDialog>
    </>
  );
}
