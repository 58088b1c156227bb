#!/usr/bin/env node
// The first step of `npm test`: are the system packages the suite runs for real installed?
// Missing ones are installed when we run as root with apt-get (CI, fresh dev containers), saying
// so; otherwise we stop at once with the exact command to run. Silent when everything is there.
// A Python module counts as installed when some python3 on the path imports it (Debian's modules
// live in /usr/lib/python3/dist-packages, which only the system's python3 reads).
// CHECK_SYSTEM_DIRS (colon-separated) replaces where programs are looked for (for its own test).
import { spawnSync } from 'node:child_process';
import { accessSync, constants, mkdirSync } from 'node:fs';
import { join } from 'node:path';

/** program → the Debian package that provides it */
const NEEDED = [
  ['sshd', 'openssh-server'],
  ['ssh', 'openssh-client'],
  ['bwrap', 'bubblewrap'],
  ['strace', 'strace'],
  ['sshfs', 'sshfs'],
  ['slurmctld', 'slurmctld'],
  ['slurmd', 'slurmd'],
  ['srun', 'slurm-client'],
  ['munged', 'munge'],
  ['git', 'git'],
  ['chromium', 'chromium'], // the report's tests open it in a real browser (test/report/browser.ts)
  // the examples of README and docs/ (test/docs/examples.test.ts) call these, as a reader would
  ['jq', 'jq'],
  ['curl', 'curl'],
  ['openssl', 'openssl'],
];

/** Python module → the Debian package that provides it */
const MODULES = [['securesystemslib', 'python3-securesystemslib']];

const dirs = (process.env.CHECK_SYSTEM_DIRS ?? `${process.env.PATH ?? ''}:/usr/sbin:/sbin`)
  .split(':')
  .filter(Boolean);

function found(program) {
  return dirs.some((d) => {
    try {
      accessSync(join(d, program), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** Does any python3 on the searched directories import `module`? */
function importable(module) {
  return dirs.some((d) => {
    const python = join(d, 'python3');
    try {
      accessSync(python, constants.X_OK);
    } catch {
      return false;
    }
    return spawnSync(python, ['-c', `import ${module}`], { stdio: 'ignore' }).status === 0;
  });
}

const missing = [
  ...new Set([
    ...NEEDED.filter(([program]) => !found(program)).map(([, pkg]) => pkg),
    ...MODULES.filter(([module]) => !importable(module)).map(([, pkg]) => pkg),
  ]),
];
const install = ['apt-get', 'install', '-y', '--no-install-recommends', ...missing];
const isRoot = process.getuid?.() === 0;
const hasApt = dirs.some((d) => {
  try {
    accessSync(join(d, 'apt-get'), constants.X_OK);
    return true;
  } catch {
    return false;
  }
});

if (missing.length > 0) {
  if (!isRoot || !hasApt) {
    process.stderr.write(
      `check-system: the tests need these system packages: ${missing.join(' ')}\n` +
        `check-system: install them, then run npm test again:\n  sudo apt-get update && sudo ${install.join(' ')}\n`,
    );
    process.exit(1);
  }
  process.stderr.write(`check-system: installing ${missing.join(' ')} (apt-get, as root)\n`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const argv of [['apt-get', 'update'], install]) {
    const r = spawnSync(argv[0], argv.slice(1), { stdio: ['ignore', 2, 2], env });
    if (r.status !== 0) {
      process.stderr.write(`check-system: \`${argv.join(' ')}\` failed (exit ${r.status}); stopping\n`);
      process.exit(1);
    }
  }
}
if (isRoot) mkdirSync('/run/sshd', { recursive: true, mode: 0o755 }); // sshd's privilege-separation dir
