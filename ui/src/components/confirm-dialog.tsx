/**
 * Confirmation for destructive actions, in a native modal <dialog> (focus is
 * kept inside, Escape cancels). For the most destructive ones the user must
 * type a word — the queue's name — before the button works.
 */
import type { ComponentChildren } from 'preact';
import { useId, useLayoutEffect, useRef, useState } from 'preact/hooks';

export interface ConfirmProps {
  open: boolean;
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  /** The button that backs out; default "Cancel" (which reads wrongly when the action itself is a cancel). */
  dismissLabel?: string;
  /** The user must type this to confirm. */
  typeToConfirm?: string;
  danger?: boolean;
  busy?: boolean;
  onConfirm(): void;
  onCancel(): void;
}

export function ConfirmDialog(props: ConfirmProps) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [typed, setTyped] = useState('');
  // One id per dialog: a page may hold several (closed ones stay in the DOM).
  const titleId = `confirm-title-${useId()}`;

  // Opened and closed in the draw that changes `open` (a layout effect), not after the next frame
  // (an effect): a closed confirmation's notice showed a frame beside the dialog still open, with
  // its button of the same name as the page's, and the page behind it still inert.
  useLayoutEffect(() => {
    const el = dialog.current;
    if (el === null) return;
    if (props.open && !el.open) {
      setTyped('');
      el.showModal();
    } else if (!props.open && el.open) {
      el.close();
    }
  }, [props.open]);

  const ready = props.typeToConfirm === undefined || typed === props.typeToConfirm;
  return (
    <dialog
      ref={dialog}
      class="dialog"
      aria-labelledby={titleId}
      onCancel={(event) => {
        event.preventDefault();
        props.onCancel();
      }}
    >
      <form
        method="dialog"
        onSubmit={(event) => {
          event.preventDefault();
          if (ready && !props.busy) props.onConfirm();
        }}
      >
        <h2 id={titleId}>{props.title}</h2>
        <div class="dialog-body">{props.children}</div>
        {props.typeToConfirm !== undefined && (
          <div class="field">
            <label for="confirm-typed">
              Type <code>{props.typeToConfirm}</code> to confirm
            </label>
            <input
              id="confirm-typed"
              autocomplete="off"
              spellcheck={false}
              value={typed}
              onInput={(event) => setTyped(event.currentTarget.value)}
            />
          </div>
        )}
        <div class="dialog-actions">
          <button type="button" class="btn" onClick={props.onCancel}>
            {props.dismissLabel ?? 'Cancel'}
          </button>
          <button
            type="submit"
            class={props.danger ? 'btn btn-danger' : 'btn btn-primary'}
            disabled={!ready || props.busy}
          >
            {props.busy ? 'Working…' : props.confirmLabel}
          </button>
        </div>
      </form>
    </dialog>
  );
}

/** State for one confirmation: which action is pending. */
export function useConfirm<T>(): { pending: T | null; ask(value: T): void; close(): void } {
  const [pending, setPending] = useState<T | null>(null);
  return { pending, ask: setPending, close: () => setPending(null) };
}
