// The workspace held open across a generator run: what serve reaches beneath it goes through
// descriptors, so a workspace or a directory in it swapped for a link is seen for what it is (a
// WorkspaceSwapError, a rejection), a FIFO never blocks, and an output is moved out of the very
// directory serve opened, never from where a link points.
import { execFileSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HeldDir, HeldWorkspace, WorkspaceSwapError } from '../../src/remote/workspace-handle.js';
import { tempDir } from '../helpers/temp-store.js';

let base: string;
let ws: string;
let decoy: string;
let held: HeldWorkspace;
beforeEach(() => {
  base = realpathSync(tempDir('gj-held-'));
  ws = join(base, 'files');
  decoy = join(base, 'host-home');
  for (const d of [join(ws, 'sub'), join(decoy, 'sub')]) mkdirSync(d, { recursive: true });
  writeFileSync(join(ws, 'sub/out.txt'), 'generated\n');
  writeFileSync(join(decoy, 'sub/out.txt'), 'HOST SECRET\n');
  held = HeldWorkspace.open(ws);
});
afterEach(() => held.close());

describe('HeldWorkspace', () => {
  it('says nothing while the name still names the directory it opened', () => {
    expect(held.swapped()).toBeNull();
  });

  it.each([
    { name: 'a symlink', swap: () => symlinkSync(decoy, ws), now: 'a symlink' },
    { name: 'another directory', swap: () => mkdirSync(ws), now: 'another file' },
    { name: 'nothing', swap: () => {}, now: 'gone' },
  ])('tamper: says the workspace was replaced when its name is now $name', (c) => {
    renameSync(ws, `${ws}.aside`);
    c.swap();
    expect(held.swapped()).toBe(
      `the generator replaced its workspace ${ws} (it is now ${c.now}); nothing was read through it`,
    );
  });

  it('tamper: a directory swapped for a link is refused, not followed', () => {
    rmSync(join(ws, 'sub'), { recursive: true });
    symlinkSync(join(decoy, 'sub'), join(ws, 'sub'));
    expect(() => held.dir('sub')).toThrow(WorkspaceSwapError);
    expect(() => held.dir('sub')).toThrow(`${ws}/sub changed under serve`);
  });

  it('tamper: a file that is a link or a FIFO is refused without following or blocking', async () => {
    symlinkSync(join(decoy, 'sub/out.txt'), join(ws, 'link.txt'));
    execFileSync('mkfifo', [join(ws, 'fifo')]);
    await expect(held.file('link.txt')).rejects.toThrow(WorkspaceSwapError);
    await expect(held.file('fifo')).rejects.toThrow(WorkspaceSwapError);
  });

  it('refuses a file whose inode is not the one the walk saw', async () => {
    const ino = lstatSync(join(ws, 'sub/out.txt'), { bigint: true }).ino;
    const sub = held.dir('sub');
    try {
      const fh = await sub.file('out.txt', ino);
      await fh.close();
      await expect(sub.file('out.txt', ino + 1n)).rejects.toThrow(WorkspaceSwapError);
    } finally {
      sub.close();
    }
  });

  it('tamper: moves an output out of the directory it opened, even when the name now points at the host', async () => {
    renameSync(ws, `${ws}.aside`);
    symlinkSync(decoy, ws);
    const to = join(base, 'built-out.txt');
    await held.moveOut('sub/out.txt', to);
    expect(readFileSync(to, 'utf8')).toBe('generated\n');
    expect(readFileSync(join(decoy, 'sub/out.txt'), 'utf8')).toBe('HOST SECRET\n');
  });

  it('tamper: refuses to move an output that is a link, and leaves its target in place', async () => {
    rmSync(join(ws, 'sub/out.txt'));
    symlinkSync(join(decoy, 'sub/out.txt'), join(ws, 'sub/out.txt'));
    const to = join(base, 'built-out.txt');
    await expect(held.moveOut('sub/out.txt', to)).rejects.toThrow(WorkspaceSwapError);
    expect(readFileSync(join(decoy, 'sub/out.txt'), 'utf8')).toBe('HOST SECRET\n');
  });

  it('copies an output to another filesystem (EXDEV), from the file it opened', async () => {
    if (!existsSync('/dev/shm')) return; // a tmpfs beside the temp dir's disk on Linux
    const to = join('/dev/shm', `gj-held-${process.pid}-${Date.now()}`);
    try {
      await held.moveOut('sub/out.txt', to);
      expect(readFileSync(to, 'utf8')).toBe('generated\n');
    } finally {
      rmSync(to, { force: true });
    }
  });

  it('a call that fails is EGJ_IO naming the workspace path, not the descriptor it went through', async () => {
    // a directory held by a descriptor that is not one (a file's): every call through it fails (ENOTDIR)
    const fd = openSync(join(ws, 'sub/out.txt'), 'r');
    const dir = new HeldDir(fd, join(ws, 'sub'));
    try {
      expect(() => dir.entries()).toThrow(`${ws}/sub: scandir failed: `);
      expect(() => dir.entries()).toThrow(expect.objectContaining({ code: 'EGJ_IO', file: `${ws}/sub` }));
      expect(() => dir.lstat('x')).toThrow(`${ws}/sub/x: lstat failed: `);
      await expect(dir.file('x')).rejects.toThrow(`${ws}/sub/x: open failed: `);
    } finally {
      closeSync(fd);
    }
  });
});
