/**
 * The lists' age filter: "Enqueued" any time, or more than 5 minutes, an
 * hour, a day or a week ago. Choosing an age fixes the moment (the server's
 * now minus the age) as `enqueuedBeforeMs` in the address, so the list, its
 * total and "all N matching" count the same jobs however long the page stays
 * open; the field then shows that moment, short enough for its column
 * ("before 01:39:12" today, else "before 5 Dec 01:39"; the list's summary
 * has it in full).
 */
import { serverNowMs } from '../clock.ts';
import { dateOf, fmtClock, fmtTime } from '../format.ts';
import { SelectField } from './select-field.tsx';

const ages = [
  { ms: 5 * 60_000, label: 'over 5 minutes ago' },
  { ms: 3_600_000, label: 'over 1 hour ago' },
  { ms: 24 * 3_600_000, label: 'over 24 hours ago' },
  { ms: 7 * 24 * 3_600_000, label: 'over 7 days ago' },
] as const;

/** "enqueued before <time>", for a list's description; '' for no age filter. */
export function describeAge(enqueuedBeforeMs: string): string {
  return enqueuedBeforeMs === '' ? '' : `enqueued before ${fmtTime(Number(enqueuedBeforeMs))}`;
}

const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** The moment in the field: its time of day when today, else its day and time. */
function shortMoment(ms: number): string {
  const d = dateOf(ms);
  if (d === null) return fmtTime(ms);
  const today = new Date(serverNowMs()).toDateString() === d.toDateString();
  return today
    ? `${fmtClock(ms)}:${String(d.getSeconds()).padStart(2, '0')}`
    : `${d.getDate()} ${months[d.getMonth()]} ${d.getFullYear() === new Date().getFullYear() ? '' : `${d.getFullYear()} `}${fmtClock(ms)}`;
}

export function AgeField({
  id,
  value,
  onChange,
}: {
  id: string;
  /** `enqueuedBeforeMs` as the address has it; '' for any time. */
  value: string;
  onChange(enqueuedBeforeMs: string): void;
}) {
  return (
    <SelectField
      id={id}
      label="Enqueued"
      value={value}
      any="any time"
      choices={[
        ...(value === '' ? [] : [{ value, label: `before ${shortMoment(Number(value))}` }]),
        ...ages.map((a) => ({ value: `ago:${a.ms}`, label: a.label })),
      ]}
      onChange={(choice) =>
        onChange(choice.startsWith('ago:') ? String(serverNowMs() - Number(choice.slice(4))) : choice)
      }
    />
  );
}
