// A real one-node Slurm cluster on this machine for the --launch tests: a private munged (its own
// key and socket, so no system munge is needed or touched), slurmctld and slurmd on free ports,
// with every spool, state, log and pid file in one temp dir. stop() ends the three daemons by the
// PIDs they wrote, never by name, and removes the dir. `srun` finds it through SLURM_CONF in env().
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';

export const SLURM_BINARIES = [
  '/usr/sbin/munged',
  '/usr/sbin/slurmctld',
  '/usr/sbin/slurmd',
  '/usr/bin/srun',
];

/** Why Slurm cannot run here, or null when its daemons are installed. */
export function slurmMissing(): string | null {
  const missing = SLURM_BINARIES.filter((b) => !existsSync(b));
  return missing.length === 0
    ? null
    : `Slurm is not installed (${missing.join(', ')} missing): apt-get install slurmctld slurmd slurm-client munge`;
}

export interface SlurmHandle {
  dir: string;
  conf: string;
  /** Environment for srun and friends: SLURM_CONF pointing at this cluster. */
  env(): Record<string, string>;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function pidIn(file: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, 'utf8').trim());
    return Number.isSafeInteger(pid) && pid > 1 ? pid : undefined;
  } catch {
    return undefined;
  }
}

async function gone(pid: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

export async function startSlurm(opts: { cpus?: number } = {}): Promise<SlurmHandle> {
  const missing = slurmMissing();
  if (missing) throw new Error(missing);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'gj-slurm-'));
  await chmod(dir, 0o755); // munged refuses a socket in a directory others cannot traverse
  const pids = {
    munged: path.join(dir, 'munged.pid'),
    ctld: path.join(dir, 'slurmctld.pid'),
    d: path.join(dir, 'slurmd.pid'),
  };
  const stop = async () => {
    for (const file of [pids.d, pids.ctld, pids.munged]) {
      const pid = pidIn(file);
      if (pid === undefined) continue;
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        continue;
      }
      if (!(await gone(pid, 5000))) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // exited meanwhile
        }
      }
    }
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await mkdir(path.join(dir, 'munge'), { mode: 0o755 });
    for (const d of ['state', 'spool']) await mkdir(path.join(dir, d));
    const key = path.join(dir, 'munge.key');
    await writeFile(key, randomBytes(1024), { mode: 0o600 });
    const socket = path.join(dir, 'munge', 'munge.sock');
    const munged = spawn(
      '/usr/sbin/munged',
      [
        `--key-file=${key}`,
        `--socket=${socket}`,
        `--pid-file=${pids.munged}`,
        `--log-file=${path.join(dir, 'munged.log')}`,
        `--seed-file=${path.join(dir, 'munge.seed')}`,
      ],
      { stdio: 'ignore' },
    );
    await new Promise<void>((resolve, reject) => {
      munged.once('exit', (code) =>
        code === 0 ? resolve() : reject(new Error(`munged exited ${code}: see ${dir}/munged.log`)),
      );
    });
    const node = os.hostname().split('.')[0]!;
    const [ctldPort, dPort] = [await freePort(), await freePort()];
    const conf = path.join(dir, 'slurm.conf');
    await writeFile(
      conf,
      [
        'ClusterName=genjobtest',
        `SlurmctldHost=${node}`,
        `SlurmctldPort=${ctldPort}`,
        `SlurmdPort=${dPort}`,
        'SlurmUser=root',
        'SlurmdUser=root',
        'AuthType=auth/munge',
        `AuthInfo=socket=${socket}`,
        'ProctrackType=proctrack/linuxproc',
        'TaskPlugin=task/none',
        'SelectType=select/cons_tres',
        'SelectTypeParameters=CR_Core', // memory is not a resource here: sessions share the node
        'MpiDefault=none',
        'ReturnToService=2',
        `StateSaveLocation=${path.join(dir, 'state')}`,
        `SlurmdSpoolDir=${path.join(dir, 'spool')}`,
        `SlurmctldPidFile=${pids.ctld}`,
        `SlurmdPidFile=${pids.d}`,
        `SlurmctldLogFile=${path.join(dir, 'slurmctld.log')}`,
        `SlurmdLogFile=${path.join(dir, 'slurmd.log')}`,
        `NodeName=${node} CPUs=${opts.cpus ?? 2} State=UNKNOWN`,
        `PartitionName=genjob Nodes=${node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:16`,
        '',
      ].join('\n'),
    );
    const env = { ...process.env, SLURM_CONF: conf } as Record<string, string>;
    await execa('/usr/sbin/slurmctld', ['-f', conf], { env });
    await execa('/usr/sbin/slurmd', ['-f', conf], { env });
    const until = Date.now() + 300_000; // a guard against a hang only
    for (;;) {
      const r = await execa('sinfo', ['-h', '-o', '%t'], { env, reject: false });
      if (String(r.stdout).trim() === 'idle') break;
      if (Date.now() > until) throw new Error(`slurm node not idle after 300 s: ${r.stdout} ${r.stderr}`);
      await new Promise((res) => setTimeout(res, 200));
    }
    return { dir, conf, env: () => ({ SLURM_CONF: conf }), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
