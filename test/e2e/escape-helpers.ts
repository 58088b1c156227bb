// What the sandbox escape suites share: a generator script exposed read-only, a mint that returns the key,
// a shell list of attempts each reported as done or refused, and files made outside the test's temp dirs
// (in /opt, /usr...) removed after each test whatever happened.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { genjob, type Sandbox } from './ssh-helpers.js';

/** Paths a test made outside its temp dirs: pushed by the test, removed after it. */
export function useStrays(): string[] {
  const strays: string[] = [];
  afterEach(() => {
    for (const p of strays.splice(0)) rmSync(p, { recursive: true, force: true });
  });
  return strays;
}

/** A generator script (executable, in the test's bin/, which `binFlags` exposes) with `body` under `#!/bin/sh`. */
export function script(sb: Sandbox, name: string, body: string): string {
  mkdirSync(path.join(sb.dir, 'bin'), { recursive: true });
  const file = path.join(sb.dir, 'bin', name);
  writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

/** The flag exposing the test's scripts read-only to a confined generator. */
export const binFlags = (sb: Sandbox) => ['--generator-bind', path.join(sb.dir, 'bin')];

export async function mintJob(sb: Sandbox, args: readonly string[]): Promise<string> {
  const r = await genjob(sb, ['mint', '--json', ...args]);
  if (r.exitCode !== 0) throw new Error(`mint failed (${r.exitCode}): ${r.stderr}`);
  return JSON.parse(String(r.stdout)).key as string;
}

/** Shell text: run each [name, command] and print `name: DONE` or `name: refused`. */
export function attempts(tries: Record<string, string>): string {
  return Object.entries(tries)
    .map(
      ([name, cmd]) =>
        `if (${cmd}) >/dev/null 2>&1; then echo "${name}: DONE"; else echo "${name}: refused"; fi`,
    )
    .join('\n');
}
