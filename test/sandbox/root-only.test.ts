// rootOnlyPaths: what under a directory a user other than the owner and group may not read — the files
// root inside the sandbox would read only because it is the host's uid 0. Outermost only, symlinks not
// followed, sorted.
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rootOnlyPaths } from '../../src/sandbox/root-only.js';

let dir = '';
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('rootOnlyPaths', () => {
  it('lists unreadable files and unsearchable directories, outermost, and nothing else', () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'gj-root-only-')));
    const f = (p: string, mode: number) => writeFileSync(join(dir, p), 'x', { mode });
    mkdirSync(join(dir, 'open/deeper'), { recursive: true });
    f('public.conf', 0o644);
    f('token', 0o600);
    f('group-only', 0o640);
    f('open/deeper/key', 0o400);
    f('open/deeper/readme', 0o444);
    mkdirSync(join(dir, 'rules.d'), { mode: 0o700 });
    f('rules.d/inner-secret', 0o600); // covered by its directory
    mkdirSync(join(dir, 'listless'), { mode: 0o711 }); // searchable, not listable: its names are secret
    mkdirSync(join(dir, 'blind'), { mode: 0o744 }); // listable, not searchable
    symlinkSync(join(dir, 'token'), join(dir, 'link-to-token')); // the target is listed, not the link
    for (const p of ['rules.d', 'listless', 'blind'])
      chmodSync(join(dir, p), { 'rules.d': 0o700, listless: 0o711, blind: 0o744 }[p]!);
    expect(rootOnlyPaths([dir])).toEqual(
      ['blind', 'group-only', 'listless', 'open/deeper/key', 'rules.d', 'token'].map((p) => join(dir, p)),
    );
  });

  it('lists nothing for a directory that is not there', () => {
    expect(rootOnlyPaths(['/nonexistent-gj-root-only'])).toEqual([]);
  });
});
