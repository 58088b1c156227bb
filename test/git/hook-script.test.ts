// The hooks genjob writes end with the sha256 of every byte above: a hook is genjob's to rewrite only
// while its bytes are exactly what genjob wrote.
import { describe, expect, it } from 'vitest';
import { hookScript, isGenjobHook } from '../../src/git/hook-script.js';

describe('isGenjobHook', () => {
  it.each(['pre-push', 'pre-merge-commit'] as const)(
    'knows the %s hook genjob writes, whatever CLI paths it names',
    (name) => {
      expect(isGenjobHook(hookScript(name, '/usr/bin/node', '/opt/genjob/dist/cli.js'))).toBe(true);
      expect(isGenjobHook(hookScript(name, "/odd path/n'de", '/x'))).toBe(true);
    },
  );

  it('refuses a hook with a check merged in, a byte changed, or its sum line moved', () => {
    const hook = hookScript('pre-push', '/usr/bin/node', '/cli.js');
    const lines = hook.split('\n');
    expect(isGenjobHook(hook.replace('genjob pull', './team-check.sh && genjob pull'))).toBe(false);
    expect(isGenjobHook(`${hook}echo after\n`)).toBe(false);
    expect(isGenjobHook(`${lines.slice(0, 3).join('\n')}\necho inserted\n${lines.slice(3).join('\n')}`)).toBe(
      false,
    );
    expect(isGenjobHook(hook.replace(/sha256:[0-9a-f]{4}/, 'sha256:0000'))).toBe(false);
    expect(isGenjobHook(hook.slice(0, -1))).toBe(false);
    expect(isGenjobHook('#!/bin/sh\n# genjob hook: pre-push, written by `genjob hook install`\n')).toBe(
      false,
    );
  });

  it('ends every hook with its sum line, and runs the gate with the base policy for a new branch', () => {
    const hook = hookScript('pre-push', '/n', '/c');
    expect(hook).toMatch(/\n# genjob hook sha256:[0-9a-f]{64}\n$/);
    expect(hook).toContain('--trust-ref "$base"');
    expect(hookScript('pre-merge-commit', '/n', '/c')).toContain(
      'genjob verify --commits "$heads --not HEAD" --trust-ref HEAD\n',
    );
  });
});
