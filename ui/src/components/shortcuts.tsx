/**
 * Keyboard shortcuts: `/` jumps to the search box, `g` then a letter goes to a
 * page (g d dashboard, g q queues, g j jobs, g l dead letters, g w workers,
 * g a audit log, g c configuration), `?` lists them. Keys typed into a field
 * are never taken.
 */
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { navigate } from '../router.tsx';

/** A page the `g` shortcut goes to (layout.tsx lists them with its navigation). */
export interface GoKey {
  readonly key: string;
  readonly href: string;
  readonly label: string;
}

function typing(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  return target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName);
}

export function Shortcuts({ searchId, goKeys }: { searchId: string; goKeys: readonly GoKey[] }) {
  const [help, setHelp] = useState(false);
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    let pendingG = 0;
    const onKey = (event: KeyboardEvent) => {
      if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey || typing(event.target))
        return;
      if (event.key === '/') {
        event.preventDefault();
        document.getElementById(searchId)?.focus();
      } else if (event.key === '?') {
        setHelp(true);
      } else if (event.key === 'g') {
        pendingG = event.timeStamp;
      } else if (pendingG !== 0 && event.timeStamp - pendingG < 1500) {
        const target = goKeys.find((k) => k.key === event.key);
        pendingG = 0;
        if (target !== undefined) {
          event.preventDefault();
          navigate(target.href);
        }
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [searchId, goKeys]);
  // In the draw that changes `help`, as ConfirmDialog does.
  useLayoutEffect(() => {
    const el = dialog.current;
    if (el === null) return;
    if (help && !el.open) el.showModal();
    if (!help && el.open) el.close();
  }, [help]);
  return (
    <dialog ref={dialog} class="dialog" aria-labelledby="shortcuts-title" onClose={() => setHelp(false)}>
      <h2 id="shortcuts-title">Keyboard shortcuts</h2>
      <table class="table table-compact">
        <tbody>
          <tr>
            <th scope="row">
              <kbd>/</kbd>
            </th>
            <td>Search for a job</td>
          </tr>
          {goKeys.map((k) => (
            <tr key={k.key}>
              <th scope="row">
                <kbd>g</kbd> <kbd>{k.key}</kbd>
              </th>
              <td>{k.label}</td>
            </tr>
          ))}
          <tr>
            <th scope="row">
              <kbd>?</kbd>
            </th>
            <td>This list</td>
          </tr>
        </tbody>
      </table>
      <div class="dialog-actions">
        <button type="button" class="btn" onClick={() => setHelp(false)}>
          Close
        </button>
      </div>
    </dialog>
  );
}
