// A really full disk for a test file: a 2 MiB tmpfs with 400 inodes mounted on a temp directory (root
// only; `problem` says why not, and the file's tests skip), filled so that only a little space or a few
// inodes are left. Mounted for the file's life (a mount point is busy until the end); unmounted by the
// afterAll this registers.
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { tempDir } from './temp-store.js';

export interface SmallDisk {
  /** The mount point. */
  mnt: string;
  /** Why no tmpfs could be mounted (the tests skip), or undefined. */
  problem: string | undefined;
  /** Fill the disk so that only `bytes` bytes (rounded to pages) or `inodes` inodes stay free. */
  fill(level: { bytes?: number; inodes?: number }): void;
  /** Free what fill took. */
  unfill(): void;
}

export function smallDisk(prefix: string, label: string): SmallDisk {
  const mnt = tempDir(prefix, tmpdir(), 'file');
  let problem: string | undefined;
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m,nr_inodes=400', 'tmpfs', mnt], { stdio: 'pipe' });
  } catch (err) {
    problem = String((err as { stderr?: Buffer }).stderr ?? err).trim();
    console.log(`${label} skipped: cannot mount a tmpfs here (${problem})`);
  }
  afterAll(() => {
    if (!problem) execFileSync('umount', [mnt]);
  });
  const filler = join(mnt, 'filler');
  return {
    mnt,
    problem,
    unfill: () => rmSync(filler, { recursive: true, force: true }),
    fill(level) {
      mkdirSync(filler, { recursive: true });
      if (level.inodes !== undefined) {
        const reserve = Array.from({ length: level.inodes }, (_, i) => join(filler, `r${i}`));
        for (const r of reserve) writeFileSync(r, '');
        for (let i = 0; ; i++) {
          try {
            writeFileSync(join(filler, `i${i}`), '');
          } catch {
            break;
          }
        }
        for (const r of reserve) unlinkSync(r);
        return;
      }
      const reserve = join(filler, 'reserve');
      writeFileSync(reserve, Buffer.alloc(level.bytes ?? 0));
      const fd = openSync(join(filler, 'bytes'), 'w');
      const chunk = Buffer.alloc(4096);
      try {
        for (;;) writeSync(fd, chunk);
      } catch {
        // full
      } finally {
        closeSync(fd);
      }
      unlinkSync(reserve);
    },
  };
}
