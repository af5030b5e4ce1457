/**
 * A form's draft of values that come from elsewhere (the address's filters,
 * a queue's settings as last read): what the user typed, until the source
 * changes, when the form starts from the source again.
 *
 * The start-over is decided while drawing, from `sourceKey`, not in an
 * effect: Preact runs an effect after the next frame (rAF or a 35 ms timer),
 * and for that frame the form showed the old draft beside the new data, and
 * a key typed then was lost when the effect came.
 */
import { useState } from 'preact/hooks';

export function useDraft<T>(source: T, sourceKey: unknown): [T, (next: T) => void] {
  const [draft, setDraft] = useState({ sourceKey, value: source });
  const current = Object.is(draft.sourceKey, sourceKey);
  return [current ? draft.value : source, (value: T) => setDraft({ sourceKey, value })];
}
