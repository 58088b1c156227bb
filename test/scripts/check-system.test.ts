// scripts/check-system.mjs, the first step of `npm test`: silent when the system packages are
// there; otherwise (not root, or no apt-get) it stops at once with the exact install command.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';

const SCRIPT = join(new URL('../..', import.meta.url).pathname, 'scripts', 'check-system.mjs');

describe('check-system', () => {
  it('says nothing and exits 0 when every package is installed (as on this machine)', async () => {
    const r = await execa(process.execPath, [SCRIPT], { reject: false });
    expect(r).toMatchObject({ exitCode: 0, stderr: '' });
  });

  it('stops with the exact install command when packages are missing and apt-get is not there', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'genjob-nosys-'));
    try {
      const r = await execa(process.execPath, [SCRIPT], {
        reject: false,
        env: { CHECK_SYSTEM_DIRS: empty },
        stripFinalNewline: false,
      });
      expect(r.exitCode).toBe(1);
      expect(r.stderr).toBe(
        'check-system: the tests need these system packages: openssh-server openssh-client bubblewrap strace sshfs slurmctld slurmd slurm-client munge git chromium jq curl openssl python3-securesystemslib\n' +
          'check-system: install them, then run npm test again:\n' +
          '  sudo apt-get update && sudo apt-get install -y --no-install-recommends openssh-server openssh-client bubblewrap strace sshfs slurmctld slurmd slurm-client munge git chromium jq curl openssl python3-securesystemslib\n',
      );
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
