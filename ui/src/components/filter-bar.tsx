/**
 * A list page's filters (Jobs, Dead letters, Audit log), built from
 * SelectField and TextField: the fields in equal columns, so no field spans
 * a row on a wide screen, and the Apply button (when the bar has text fields
 * to submit) last. On a phone the bar starts folded under "Filters (N set)",
 * so the list, not the filters, fills the first screen.
 */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';

/** The width below which the pages take their phone layout (the stylesheets' breakpoint). */
const phoneQuery = '(max-width: 760px)';

export function FilterBar({
  label,
  active,
  submitLabel,
  onSubmit,
  children,
}: {
  /** The bar's accessible name ("Job filters"). */
  label: string;
  /** How many filters are set (said on the folded bar). */
  active: number;
  /** With text fields: the button that applies them. */
  submitLabel?: string;
  onSubmit?(): void;
  children: ComponentChildren;
}) {
  const [open, setOpen] = useState(() => !window.matchMedia(phoneQuery).matches);
  return (
    <details
      class="card filter-bar"
      aria-label={label}
      open={open}
      onToggle={(e) => setOpen(e.currentTarget.open)}
    >
      <summary>Filters{active > 0 ? ` (${active} set)` : ''}</summary>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          onSubmit?.();
        }}
      >
        {children}
        {onSubmit !== undefined && (
          <button type="submit" class="btn btn-primary">
            {submitLabel ?? 'Apply'}
          </button>
        )}
      </form>
    </details>
  );
}
