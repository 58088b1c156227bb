// Every read from the host has a deadline and a cap: a hello whose body never ends, or a huge one,
// is in doubt within the hello deadline, and the session is killed (a real child process each time).
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import type { ServeLauncher, ServeProcess } from '../../src/transport/launcher.js';
import { InDoubtError, ServeClient } from '../../src/worker/serve-client.js';

/** A launcher whose "serve" is `node -e script`. */
function scripted(script: string): ServeLauncher & { procs: ServeProcess[] } {
  const procs: ServeProcess[] = [];
  return {
    procs,
    destination: 'scripted',
    start() {
      const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'pipe'] });
      const exited = new Promise<{ exitCode: number | null; signal: string | null }>((resolve) =>
        child.once('close', (exitCode, signal) => resolve({ exitCode, signal })),
      );
      const proc = {
        stdin: child.stdin,
        stdout: child.stdout,
        stderr: child.stderr,
        exited,
        kill: () => child.kill('SIGKILL'),
      };
      procs.push(proc);
      return proc;
    },
    async shipmentFacts() {
      return {};
    },
    async close() {},
  };
}

const HELLO = `process.stdout.write('GJ1 ' + JSON.stringify({ type: 'hello', protocol: 'genjob-serve/1' }) + '\\n');`;
const chunk = (n: number) =>
  `{ const b = Buffer.alloc(4 + ${n}); b.writeUInt32BE(${n}, 0); process.stdout.write(b); }`;

describe('ServeClient.open', () => {
  it('is in doubt within the hello deadline when the hello body never ends, and kills the session', async () => {
    // one body chunk, then silence: no end-of-body marker ever comes
    const launcher = scripted(`${HELLO} ${chunk(10)} setInterval(() => {}, 1000);`);
    const err = await ServeClient.open(launcher, [], { maxAnswerBytes: 1 << 30, helloTimeoutMs: 500 }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(InDoubtError);
    expect((err as Error).message).toMatch(/no answer within/);
    expect((await launcher.procs[0]!.exited).signal).toBe('SIGKILL');
  });

  it('refuses a hello body over the small cap, without reading it all', async () => {
    const launcher = scripted(
      `${HELLO} for (let i = 0; i < 8; i++) ${chunk(60_000)} setInterval(() => {}, 1000);`,
    );
    const err = await ServeClient.open(launcher, [], {
      maxAnswerBytes: 1 << 30,
      helloTimeoutMs: 600_000,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InDoubtError);
    expect((err as Error).message).toMatch(/over the 65536-byte cap/);
  });

  it('opens a session whose hello body ends', async () => {
    const end = `process.stdout.write(Buffer.alloc(4));`;
    const launcher = scripted(`${HELLO} ${chunk(3)} ${end} process.stdin.resume();`);
    const client = await ServeClient.open(launcher, [], { maxAnswerBytes: 1 << 30, helloTimeoutMs: 600_000 });
    expect(client.hello).toMatchObject({ type: 'hello' });
    client.kill();
  });
});
