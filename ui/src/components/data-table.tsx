/**
 * The one table every list page uses (jobs, dead letters, audit, queues,
 * workers). On wide screens it is a table; on phones each row becomes a
 * labelled block whose first line is the row's name, so the name stays in
 * view next to its buttons and no column has to scroll away.
 *
 * Selection (optional) is of rows on screen only: rows that leave the screen
 * (next page, new filter, refresh) leave the selection at once, so a bulk
 * action never touches a row the operator cannot see. "Select all" is a
 * visible, labelled checkbox above the rows, usable on a phone.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { fmtNum } from '../format.ts';

export interface Column<T> {
  /** The header, and each cell's label on phones. */
  header: string;
  cell(row: T): ComponentChildren;
  /** A number: right-aligned, tabular digits. */
  num?: boolean;
  /** Extra classes for the cells: nowrap, error-cell, detail-cell, mono. */
  className?: string;
  /** Left out on phones (the detail page has it). */
  hideNarrow?: boolean;
  /** The row's name: a row header, first on phones. */
  rowHeader?: boolean;
  /** Hover text for the cell. */
  title?(row: T): string | undefined;
}

/**
 * The selected rows of a live list. A refresh would drop selected rows, so the list holds its
 * refreshes while any is selected (`paused`, for useApi), and LiveStatus says why (`pausedBecause`).
 */
export function useSelection(): {
  selected: Set<string>;
  setSelected(next: Set<string>): void;
  paused: boolean;
  pausedBecause: string;
} {
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const n = selected.size;
  return {
    selected,
    setSelected,
    paused: n > 0,
    pausedBecause: `while ${fmtNum(n)} row${n === 1 ? ' is' : 's are'} selected`,
  };
}

export interface Selection {
  selected: ReadonlySet<string>;
  onChange(next: Set<string>): void;
  /** Accessible name of a row's checkbox ("Select job …"). */
  rowLabel(key: string): string;
  /** Bulk actions for the selected rows, shown in the selection bar. */
  actions?: ComponentChildren;
}

export function DataTable<T>({
  label,
  columns,
  rows,
  rowKey,
  selection,
  rowActions,
  wide,
  rowClass,
}: {
  label: string;
  columns: readonly Column<T>[];
  rows: readonly T[];
  rowKey(row: T): string;
  selection?: Selection;
  /** Buttons at the end of each row. */
  rowActions?(row: T): ComponentChildren;
  /** Many columns: keeps a readable width and scrolls inside its card between phone and desktop. */
  wide?: boolean;
  /** A class for a row that needs attention (`row-warning`). */
  rowClass?(row: T): string | undefined;
}) {
  const keys = rows.map(rowKey);
  const selected = selection?.selected;
  // Rows that left the screen leave the selection.
  useEffect(() => {
    if (selection === undefined || selected === undefined) return;
    const visible = new Set(keys);
    if ([...selected].some((key) => !visible.has(key))) {
      selection.onChange(new Set([...selected].filter((key) => visible.has(key))));
    }
  }, [keys.join('\n'), selected]);

  const allChecked =
    selection !== undefined && keys.length > 0 && keys.every((k) => selection.selected.has(k));
  return (
    <>
      {selection !== undefined && (
        <div class="selection-bar">
          <label class="select-all">
            <input
              type="checkbox"
              checked={allChecked}
              disabled={keys.length === 0}
              onChange={(e) => selection.onChange(e.currentTarget.checked ? new Set(keys) : new Set())}
            />
            Select all {fmtNum(keys.length)} on this page
          </label>
          <span aria-live="polite" class="selection-count">
            {fmtNum(selection.selected.size)} selected
          </span>
          {selection.actions}
        </div>
      )}
      <div class="table-wrap">
        <table class={`table table-stack${wide ? ' table-wide' : ''}`} aria-label={label}>
          <thead>
            <tr>
              {selection !== undefined && (
                <th scope="col">
                  <span class="sr-only">Selected</span>
                </th>
              )}
              {columns.map((c) => (
                <th
                  key={c.header}
                  scope="col"
                  class={[c.num ? 'num' : '', c.hideNarrow ? 'hide-narrow' : ''].join(' ')}
                >
                  {c.header}
                </th>
              ))}
              {rowActions !== undefined && (
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {rows.map((row, i) => {
              const key = keys[i] ?? '';
              return (
                <tr
                  key={key}
                  class={
                    [selection?.selected.has(key) ? 'selected' : '', rowClass?.(row) ?? '']
                      .join(' ')
                      .trim() || undefined
                  }
                >
                  {selection !== undefined && (
                    <td class="select-cell">
                      <input
                        type="checkbox"
                        aria-label={selection.rowLabel(key)}
                        checked={selection.selected.has(key)}
                        onChange={() => {
                          const next = new Set(selection.selected);
                          if (next.has(key)) next.delete(key);
                          else next.add(key);
                          selection.onChange(next);
                        }}
                      />
                    </td>
                  )}
                  {columns.map((c) => {
                    const classes = [c.num ? 'num' : '', c.hideNarrow ? 'hide-narrow' : '', c.className ?? '']
                      .join(' ')
                      .trim();
                    const title = c.title?.(row);
                    return c.rowHeader ? (
                      <th
                        key={c.header}
                        scope="row"
                        data-label={c.header}
                        class={classes || undefined}
                        title={title}
                      >
                        {c.cell(row)}
                      </th>
                    ) : (
                      <td key={c.header} data-label={c.header} class={classes || undefined} title={title}>
                        {c.cell(row)}
                      </td>
                    );
                  })}
                  {rowActions !== undefined && <td class="actions">{rowActions(row)}</td>}
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </>
  );
}
