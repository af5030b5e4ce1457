/**
 * A queue as the admin API shows it: the engine's QueueInfo plus every
 * setting by its config-file name, with its value, the value as one would type
 * it (what the edit form starts from), its source, and the config file's value
 * under a run-time override (what a reset gives back).
 */
import { queueSettingText } from '../config/index.ts';
import { flattenQueueSettings, queueSettingKeys, queueSettingName } from '../engine/settings.ts';
import type { QueueInfo } from '../engine/types.ts';
import type { QueueView, SettingValueView } from './api-types.ts';

export type { QueueView, SettingValueView };

export function queueView(queue: QueueInfo): QueueView {
  const effective = flattenQueueSettings(queue.settings);
  const settingValues = queueSettingKeys.map((key) => {
    const name = queueSettingName(key);
    return {
      key: name,
      value: effective[key],
      text: queueSettingText(name, effective[key]),
      source: queue.settingSources[key],
      fileValue: queue.fileSettings[key],
      fileText: queueSettingText(name, queue.fileSettings[key]),
    };
  });
  return { ...queue, settingValues };
}
