/** A labelled choice, as every filter bar uses it: a leading "any" option, then the choices. */

export interface Choice {
  value: string;
  label: string;
}

export function SelectField({
  id,
  label,
  value,
  any,
  choices,
  onChange,
}: {
  id: string;
  label: string;
  value: string;
  /** The label of the empty choice ("all queues"); none when absent. */
  any?: string;
  choices: readonly (Choice | string)[];
  onChange(value: string): void;
}) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <select id={id} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        {any !== undefined && <option value="">{any}</option>}
        {choices.map((c) => {
          const { value: v, label: l } = typeof c === 'string' ? { value: c, label: c } : c;
          return (
            <option key={v} value={v}>
              {l}
            </option>
          );
        })}
      </select>
    </div>
  );
}
