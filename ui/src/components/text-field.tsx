/** A labelled text box, as every filter bar and form uses it (SelectField's sibling). */

export function TextField({
  id,
  label,
  value,
  placeholder,
  onInput,
}: {
  id: string;
  label: string;
  value: string;
  /** What an empty box means ("any type"). */
  placeholder?: string;
  onInput(value: string): void;
}) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input
        id={id}
        value={value}
        placeholder={placeholder}
        autocomplete="off"
        onInput={(e) => onInput(e.currentTarget.value)}
      />
    </div>
  );
}
