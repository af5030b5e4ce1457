/** The queue list many pages need (selectors, counts), refreshed every few seconds and after every change. */
import { useApi } from './hooks.ts';
import type { QueueInfo } from './types.ts';

export function useQueues() {
  const loaded = useApi<{ queues: QueueInfo[] }>('/api/v1/queues', { pollMs: 5000 });
  return {
    ...loaded,
    queues: loaded.data?.queues ?? [],
    names: loaded.data?.queues.map((q) => q.name) ?? [],
  };
}
