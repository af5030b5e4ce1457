/** A choice of one among a few, as a row of buttons (the dashboard's windows). */
export function Segmented<K extends string>({
  legend,
  options,
  value,
  onChoose,
}: {
  legend: string;
  options: readonly { key: K; label: string }[];
  value: K;
  onChoose(key: K): void;
}) {
  return (
    <fieldset class="segmented">
      <legend class="sr-only">{legend}</legend>
      {options.map((o) => (
        <button
          key={o.key}
          type="button"
          class={o.key === value ? 'btn btn-small btn-primary' : 'btn btn-small'}
          aria-pressed={o.key === value}
          onClick={() => onChoose(o.key)}
        >
          {o.label}
        </button>
      ))}
    </fieldset>
  );
}
