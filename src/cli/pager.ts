// Long output through a pager, as git does: only when stdout is a terminal, through $GENJOB_PAGER,
// else $PAGER, else `less -FRX` (quits at once when the text fits, keeps colours, leaves the screen
// as it was). An empty pager or `cat` means no pager; a pager that cannot start prints directly.
import { spawnSync } from 'node:child_process';

export function pagerCommand(env: NodeJS.ProcessEnv = process.env): string | null {
  const cmd = (env.GENJOB_PAGER ?? env.PAGER ?? 'less -FRX').trim();
  return cmd === '' || cmd === 'cat' ? null : cmd;
}

/** Write `text` to stdout, through the pager when stdout is a TTY. */
export function writePaged(text: string): void {
  const cmd = process.stdout.isTTY ? pagerCommand() : null;
  if (cmd !== null) {
    const r = spawnSync('sh', ['-c', cmd], {
      input: text,
      stdio: ['pipe', 'inherit', 'inherit'],
      env: { LESS: 'FRX', ...process.env },
    });
    if (!r.error && r.status !== 127) return; // 127: the shell found no such pager
  }
  process.stdout.write(text);
}
