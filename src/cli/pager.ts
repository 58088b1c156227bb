// Long output through a pager, as git does: only when stdout is a terminal, through $GENJOB_PAGER,
// else $PAGER, else `less -FRX` (quits at once when the text fits, keeps colours, leaves the screen
// as it was). An empty pager or `cat` means no pager; a pager that cannot start prints directly.
// node:child_process (and net, dgram... under it) is loaded only to start a pager: every command's
// output comes through here, and most start no process.

export function pagerCommand(env: NodeJS.ProcessEnv = process.env): string | null {
  const cmd = (env.GENJOB_PAGER ?? env.PAGER ?? 'less -FRX').trim();
  return cmd === '' || cmd === 'cat' ? null : cmd;
}

/** Write `text` to stdout, through the pager when stdout is a TTY. */
export function writePaged(text: string): void {
  const cmd = process.stdout.isTTY ? pagerCommand() : null;
  if (cmd !== null) {
    const { spawnSync } = process.getBuiltinModule('node:child_process');
    const r = spawnSync('sh', ['-c', cmd], {
      input: text,
      stdio: ['pipe', 'inherit', 'inherit'],
      env: { LESS: 'FRX', ...process.env },
    });
    if (!r.error && r.status !== 127) return; // 127: the shell found no such pager
  }
  process.stdout.write(text);
}
