/**
 * A queue as the admin API shows it: the engine's QueueInfo plus every
 * setting by its config-file name, with its value, the value as one would type
 * it (what the edit form starts from), its source, and the config file's value
 * under a run-time override (what a reset gives back), and what a value does
 * where the number alone does not say it (a 0 that means "no limit", a burst
 * derived from the rate).
 */
import { queueSettingMeaning, queueSettingText } from '../config/index.ts';
import {
  flattenQueueSettings,
  type QueueSettingsFlat,
  queueSettingKeys,
  queueSettingName,
} from '../engine/settings.ts';
import type { QueueInfo } from '../engine/types.ts';
import type { QueueView } from './api-types.ts';

export type { QueueView };

/** `overrides`: the queue's run-time overrides as given (a burst of 0 stays 0), to tell what is derived. */
export function queueView(queue: QueueInfo, overrides: Readonly<Partial<QueueSettingsFlat>> = {}): QueueView {
  const effective = flattenQueueSettings(queue.settings);
  const configured = { ...queue.fileSettings, ...overrides };
  const settingValues = queueSettingKeys.map((key) => {
    const name = queueSettingName(key);
    return {
      key: name,
      value: effective[key],
      text: queueSettingText(name, effective[key]),
      source: queue.settingSources[key],
      fileValue: queue.fileSettings[key],
      fileText: queueSettingText(name, queue.fileSettings[key]),
      ...queueSettingMeaning(key, configured),
    };
  });
  return { ...queue, settingValues };
}
