// Wake the worker when queue/ may have work. chokidar events are hints only (events can be
// dropped or merged under load), so next() also resolves on a timer and the caller
// always does a full readdir; it resolves at once when the stop signal fires.
import type { Store } from '../store/store.js';

export interface QueueWatch {
  next: () => Promise<void>;
  close: () => Promise<void>;
}

export async function watchQueue(store: Store, signal: AbortSignal, rescanMs = 2000): Promise<QueueWatch> {
  const { watch } = await import('chokidar');
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const w of waiters) w();
    waiters.clear();
  };
  const watcher = watch(store.layout.dir('queue'), { ignoreInitial: true, depth: 0 });
  watcher.on('add', wake).on('change', wake);
  signal.addEventListener('abort', wake, { once: true });
  return {
    next: () =>
      new Promise<void>((resolve) => {
        if (signal.aborted) return resolve();
        const timer = setTimeout(() => {
          waiters.delete(done);
          resolve();
        }, rescanMs);
        const done = () => {
          clearTimeout(timer);
          resolve();
        };
        waiters.add(done);
      }),
    close: () => watcher.close(),
  };
}
