// What the sandbox's own filesystems may hold. Every tmpfs lives in the host's memory, and one mounted
// without a size may grow to half of it: a generator (or checker) filling /tmp, /dev/shm, /dev and a mask
// or two could take all of the host's memory, and the kernel's OOM killer would end the host's processes
// (sshd, serve, other runs), never the tmpfs, which no process holds. So /tmp and /dev/shm are bounded,
// and every other tmpfs (/dev, each mask) is read-only (bwrap-argv.ts).
import { totalmem } from 'node:os';

/** /tmp (and the sandbox HOME in it) holds at most this, on a host with memory to spare. */
export const TMP_MAX_BYTES = 2 * 1024 ** 3;
/** /dev/shm (POSIX shared memory): Docker's default size. */
export const SHM_BYTES = 64 * 1024 ** 2;

/** /tmp's size: a quarter of the host's memory, at most TMP_MAX_BYTES, in whole pages. */
export function tmpBytes(memory: number = totalmem()): number {
  const quarter = Math.floor(memory / 4 / 4096) * 4096;
  return Math.max(4096, Math.min(TMP_MAX_BYTES, quarter));
}
