// Every example in README.md and docs/*.md runs, for real, against the built CLI, so the docs cannot
// drift from the code. How a contributor marks a fenced block (its info string, after the language):
//
//   ```sh runnable               run it (bash -e -o pipefail); it must exit 0 (`exit=N`: N)
//   ```console runnable          run its `$ ` lines (`> ` continues one); `$ echo $?` must print the next line
//   ```sh runnable file=NAME     not run: written to NAME (relative to the current directory, or ~/…)
//   ```sh not-runnable: WHY      not run, for the reason given (listed by the last test below; use sparingly)
//
// A block of shell (sh, bash, shell, console) must say one of these, and a block without a language
// that holds `$ ` or `genjob ` lines (other than a `[options]` synopsis) must name its language
// (`text` for a synopsis or output). Each file is one session, its runnable blocks run in order in a
// fresh temp directory: HOME of its own, the current directory a git repository holding a copy of
// fixtures/toy-repo (committed on `main`), `genjob` on PATH (the built CLI), exported variables and
// the current directory carried from block to block. A block inside an HTML comment (<!-- … -->) runs
// too but is not shown: set-up and checks. It may use GJ_DOCS_SESSION (the session's directory),
// GJ_DOCS_PKG (this package), GJ_DOCS_NODE (node), GJ_DOCS_SSH_CONFIG (an ssh config whose Host
// free-box is a real sshd on loopback), GJ_DOCS_REMOTE_SERVE (a remote command starting this CLI's
// serve there, for genjob.config.json's ssh.remote_cmd) and GJ_DOCS_OPENAI_URL. The model endpoints the docs name
// (http://127.0.0.1:11434/v1, https://api.openai.com/v1) are replaced by a fake OpenAI-compatible
// server on loopback that answers every request (interactive and batch) with a small edit.
// A block must not close a pipe early under pipefail (`cmd | grep -q`, `cmd | head` can kill cmd
// with SIGPIPE, exit 141): read it all (grep into /dev/null, sed -n 1p, jq). GJ_DOCS_ONLY=docs/x.md runs one file.
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  chatCompletion,
  type FakeOpenAi,
  startFakeOpenAi,
  structuredAnswer,
} from '../helpers/fake-openai.js';
import { useSshd } from '../helpers/sshd.js';
import { tempDir } from '../helpers/temp-store.js';

const PKG = resolve(import.meta.dirname, '../..');
const CLI = join(PKG, 'bin', 'genjob.js');
const SHELLS = new Set(['sh', 'bash', 'shell', 'console']);
const ENDPOINTS = ['http://127.0.0.1:11434/v1', 'https://api.openai.com/v1'];

interface Block {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  info: string;
  body: string;
  hidden: boolean;
  runnable: boolean;
  notRunnable?: string;
  writeTo?: string;
  exit: number;
}

/** The fenced blocks of a Markdown file, with whether each sits in an HTML comment. */
function parseBlocks(file: string, text: string): Block[] {
  const out: Block[] = [];
  const lines = text.split('\n');
  let inComment = false;
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    const open = /^\s*(`{3,}|~{3,})(.*)$/.exec(l);
    if (!open) {
      if (l.includes('<!--') && !l.includes('-->')) inComment = true;
      else if (l.includes('-->')) inComment = false;
      continue;
    }
    const fence = open[1]!;
    const info = open[2]!.trim();
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && !new RegExp(`^\\s*${fence[0]}{${fence.length},}\\s*$`).test(lines[j]!))
      body.push(lines[j++]!);
    const [lang = '', ...rest] = info.split(/\s+/);
    const notRunnable = /(?:^|\s)not-runnable:?\s*(.*)$/.exec(info);
    out.push({
      file,
      line: i + 1,
      lang,
      info,
      body: body.length ? `${body.join('\n')}\n` : '',
      hidden: inComment,
      runnable: rest.includes('runnable'),
      ...(notRunnable ? { notRunnable: notRunnable[1]!.trim() } : {}),
      ...(rest.find((t) => t.startsWith('file='))
        ? { writeTo: rest.find((t) => t.startsWith('file='))!.slice(5) }
        : {}),
      exit: Number(rest.find((t) => t.startsWith('exit='))?.slice(5) ?? 0),
    });
    i = j;
  }
  return out;
}

const DOCS = [
  'README.md',
  ...readdirSync(join(PKG, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
]
  .filter((f) => !process.env.GJ_DOCS_ONLY || process.env.GJ_DOCS_ONLY === f)
  .sort();
const ALL = DOCS.flatMap((f) => parseBlocks(f, readFileSync(join(PKG, f), 'utf8')));
const where = (b: Block) => `${b.file}:${b.line}`;

/** A line of commands in a block with no language: a `$ ` prompt, or genjob run (not a synopsis). */
const commandLine = (l: string) => /^\$ /.test(l) || (/^genjob /.test(l) && !/\[(options|command)\]/.test(l));

describe('the fenced blocks of README.md and docs/', () => {
  it('say what each shell block is (runnable, file=, or not-runnable with a reason)', () => {
    const problems = ALL.flatMap((b) => {
      if (SHELLS.has(b.lang) && !b.runnable && b.notRunnable === undefined)
        return [`${where(b)}: a \`${b.lang}\` block must say "runnable" or "not-runnable: WHY"`];
      if (b.notRunnable === '') return [`${where(b)}: not-runnable needs a reason`];
      if (b.lang === '' && b.body.split('\n').some(commandLine))
        return [`${where(b)}: a block of commands names its language (sh, console; text for a synopsis)`];
      return [];
    });
    expect(problems).toEqual([]);
  });
});

/** The fake model's edit: every file it is shown gets a line naming the instruction (a new one is created). */
function fakeModel(body: unknown) {
  const req = body as { messages?: Array<{ role: string; content: string }>; response_format?: unknown };
  const user = req.messages?.find((m) => m.role === 'user')?.content ?? '';
  if (req.response_format !== undefined) {
    const files = [
      ...user.matchAll(
        /^=== FILE: (.+?) ===( \(does not exist yet; create it\))?\n([\s\S]*?)(?:^=== END FILE ===$|(?=^=== FILE: ))/gm,
      ),
    ].map((m) => ({ path: m[1]!, content: `${m[2] ? '' : m[3]!}# changed by the fake model\n` }));
    return chatCompletion(structuredAnswer(files), { usage: { prompt_tokens: 100, completion_tokens: 20 } });
  }
  // a plain request (a script of its own): the whole new file, after the instruction and a blank line
  const source = user.split('\n\n').slice(1).join('\n\n');
  return chatCompletion(`${source}# changed by the fake model\n`, {
    usage: { prompt_tokens: 50, completion_tokens: 10 },
  });
}

const sshd = useSshd();
let fake: FakeOpenAi;
beforeAll(async () => {
  fake = await startFakeOpenAi([], {
    answer: (body) => ({ body: fakeModel(body) }),
    batch: { answer: (_id, body) => ({ body: fakeModel(body) }), pollsToFinish: 1 },
  });
});
afterAll(async () => {
  await fake?.close();
});

/** A fresh session: HOME, the toy repository committed on main, genjob on PATH, the variables above. */
function session(): { dir: string; env: Record<string, string>; state: string; cwd: string } {
  const dir = tempDir('gj-docs-');
  const home = join(dir, 'home');
  const repo = join(dir, 'repo');
  const bin = join(dir, 'bin');
  for (const d of [home, bin]) mkdirSync(d, { recursive: true });
  writeFileSync(
    join(home, '.gitconfig'),
    '[user]\n\tname = Doc Reader\n\temail = reader@example.com\n[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n',
  );
  writeFileSync(
    join(bin, 'genjob'),
    `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} "$@"\n`,
  );
  chmodSync(join(bin, 'genjob'), 0o755);
  const sshConfig = join(dir, 'ssh_config');
  writeFileSync(sshConfig, readFileSync(sshd().sshConfigFile, 'utf8').replace(/^Host .*$/m, 'Host free-box'));
  cpSync(join(PKG, 'fixtures', 'toy-repo'), repo, { recursive: true });
  const env = {
    PATH: `${bin}:${dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`,
    HOME: home,
    LANG: 'C.UTF-8',
    GIT_CONFIG_NOSYSTEM: '1',
    GJ_DOCS_SESSION: dir,
    GJ_DOCS_PKG: PKG,
    GJ_DOCS_NODE: process.execPath,
    GJ_DOCS_SSH_CONFIG: sshConfig,
    GJ_DOCS_OPENAI_URL: fake.url,
    // how a host's serve is started over ssh: this CLI, with a cache of the session's
    GJ_DOCS_REMOTE_SERVE: `${process.execPath} ${CLI} serve --session --cache-dir ${join(dir, 'host-cache')}`,
  };
  for (const args of [
    ['init', '-q'],
    ['add', '-A'],
    ['commit', '-qm', 'the toy repository'],
  ])
    execFileSync('git', args, { cwd: repo, env });
  const state = join(dir, 'state.sh');
  const cwd = join(dir, 'state.cwd');
  writeFileSync(state, '');
  writeFileSync(cwd, repo);
  return { dir, env, state, cwd };
}

const withEndpoints = (text: string) => ENDPOINTS.reduce((t, e) => t.split(e).join(fake.url), text);

/** The shell text that runs a console block's `$ ` commands, checking each `$ echo $?` against the next line. */
function consoleScript(body: string): string {
  const lines = body.split('\n');
  const out = [
    '__gj_rc() { [ "$2" = "$1" ] || { echo "exit status $2, the example says $1" >&2; exit 97; }; }',
  ];
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i]!.startsWith('$ ')) continue;
    let cmd = lines[i]!.slice(2);
    while (lines[i + 1]?.startsWith('> ')) cmd += `\n${lines[++i]!.slice(2)}`;
    out.push(cmd === 'echo $?' ? `__gj_rc ${JSON.stringify(lines[i + 1] ?? '')} $?` : cmd);
  }
  return `${out.join('\n')}\n`;
}

async function runBlock(b: Block, s: ReturnType<typeof session>): Promise<void> {
  const text = withEndpoints(b.body);
  if (b.writeTo !== undefined) {
    const path = b.writeTo.startsWith('~/')
      ? join(s.env.HOME!, b.writeTo.slice(2))
      : resolve(readFileSync(s.cwd, 'utf8').trim(), b.writeTo);
    expect(path.startsWith(`${s.dir}/`), `${where(b)}: file= must stay inside the session`).toBe(true);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text, { mode: SHELLS.has(b.lang) ? 0o755 : 0o644 });
    return;
  }
  const body = b.lang === 'console' ? consoleScript(text) : text;
  // the state of the session (exported variables, the directory) goes from block to block
  const script = [
    `. ${JSON.stringify(s.state)}`,
    `cd "$(cat ${JSON.stringify(s.cwd)})"`,
    `trap 'export -p | grep -Ev "^declare -x (PWD|OLDPWD|SHLVL|_)=" > ${JSON.stringify(s.state)}; pwd > ${JSON.stringify(s.cwd)}' EXIT`,
    b.lang === 'console' ? '' : 'set -e -o pipefail',
    body,
  ].join('\n');
  const r = await execa('bash', ['--noprofile', '--norc', '-c', script], {
    env: s.env,
    extendEnv: false,
    reject: false,
    stdin: 'ignore',
    all: true,
  });
  expect(r.exitCode, `${where(b)} ran:\n${b.body}\nand said:\n${r.all}`).toBe(b.exit);
}

describe('the runnable examples', () => {
  for (const file of DOCS) {
    const runnable = ALL.filter((b) => b.file === file && b.runnable);
    if (runnable.length === 0) continue;
    it(`${file}: its ${runnable.length} runnable block(s) run against the built CLI`, async () => {
      const s = session();
      for (const b of runnable) await runBlock(b, s);
    });
  }

  it('lists the examples that are not run, each with its reason', () => {
    const skipped = ALL.filter((b) => b.notRunnable !== undefined);
    const shown = ALL.filter((b) => SHELLS.has(b.lang) && !b.hidden);
    console.log(
      [
        `${shown.filter((b) => b.runnable).length} of ${shown.length} shell examples in README.md and docs/ run (plus ${ALL.filter((b) => b.hidden && b.runnable).length} hidden set-up blocks); not run:`,
        ...skipped.map((b) => `  ${where(b)}: ${b.notRunnable}`),
      ].join('\n'),
    );
    for (const b of skipped) expect(b.notRunnable, where(b)).not.toBe('');
  });
});
