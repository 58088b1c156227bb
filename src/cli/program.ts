// commander wiring. Each command's module is imported only when that command runs, so
// `genjob --version` and `genjob status` do not pay for execa, tar or the ssh code.
import { join } from 'node:path';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { MAX_WAIT_SECONDS } from '../core/duration.js';
import { VERSION } from '../version.js';
import { emit, jsonLine } from './main.js';
import { packageRoot } from './package-root.js';
import type { CommandResult } from './result.js';

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** A path option's value: not empty (an empty path names the current directory, or nothing). */
function path(value: string): string {
  if (value === '') throw new InvalidArgumentError('takes a path, not an empty one');
  return value;
}

function positiveInt(name: string) {
  return (value: string) => {
    if (!/^\d+$/.test(value) || Number(value) <= 0)
      throw new InvalidArgumentError(`${name} takes a whole number above 0`);
    return Number(value);
  };
}

/** A number of seconds above 0 and at most a week (MAX_WAIT_SECONDS): every wait an option sets. */
function seconds(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || n > MAX_WAIT_SECONDS)
    throw new InvalidArgumentError(`takes a number of seconds above 0, at most ${MAX_WAIT_SECONDS} (a week)`);
  return n;
}

const SIZE_UNIT = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 } as const;

/** A size in bytes: a whole number above 0, optionally with K, M or G (powers of 1024): 512K, 64M, 1G. */
function byteSize(value: string): number {
  const m = /^(\d{1,12})([kmg]?)$/i.exec(value);
  const n = m ? Number(m[1]) * SIZE_UNIT[m[2]!.toLowerCase() as keyof typeof SIZE_UNIT] : 0;
  if (n <= 0)
    throw new InvalidArgumentError(
      'takes a size above 0: a number of bytes, or one with K, M or G (512K, 64M, 1G)',
    );
  return n;
}

function secondsUpTo(max: number) {
  return (value: string): number => {
    const n = seconds(value);
    if (n > max) throw new InvalidArgumentError(`takes a number of seconds above 0, at most ${max}`);
    return n;
  };
}

/** Every exit code a command can end with (docs/exit-codes.md; README lists the same). */
export const EXIT_CODES_HELP =
  'Exit codes: 0 done, 1 bug, 2 bad usage or input, 3 rejected, 4 conflict (stale, key reuse, lock, lease lost),\n' +
  '5 the environment failed (I/O, disk full), 75 open: try again later (genjob gate: a run not decided yet;\n' +
  'genjob pull: the remote did not answer within --timeout),\n' +
  '130 work stopped by SIGINT.';

/** After a usage error, point at the help of the command that was run, by its whole name. */
function helpHintAfterErrors(cmd: Command, name: string): void {
  cmd.showHelpAfterError(`(run genjob ${name ? `${name} ` : ''}--help for usage)`);
  for (const sub of cmd.commands) helpHintAfterErrors(sub, `${name} ${sub.name()}`.trim());
}

/** The options every command shares. */
function common(cmd: Command): Command {
  return cmd
    .option('--root <dir>', 'repository root (default: nearest directory above with .gen/ or .git/)', path)
    .option('--json', 'print one machine-readable JSON result on stdout')
    .option('--debug', 'print stack traces for internal errors');
}

/** The shared options of the host-side cache commands: as common(), but no --root (they read no repository). */
function hostCommon(cmd: Command): Command {
  return cmd
    .option('--json', 'print one machine-readable JSON result on stdout')
    .option('--debug', 'print stack traces for internal errors');
}

/** How generators are confined (work and serve): one block, shared by both commands. */
function sandboxOptions(cmd: Command): Command {
  return cmd
    .option(
      '--generator-env <NAME>',
      'pass this environment variable to the generator (repeatable; nothing else of the environment is passed)',
      collect,
    )
    .option('--generator-network', 'let the generator reach the network (off by default)')
    .option('--generator-bind <path>', 'expose this path read-only to the generator (repeatable)', collect)
    .option(
      '--generator-bind-rw <path>',
      'expose this path writable to the generator (repeatable; weakens the confinement, see docs/trust.md)',
      collect,
    )
    .option('--no-sandbox', 'run generators unconfined (no bubblewrap); receipts record sandbox kind "none"')
    .option(
      '--sandbox-user <user>',
      'USER, UID or USER:GID a serve run as root runs generators as (default: nobody; root keeps the sandbox root, weaker: see docs/trust.md)',
    );
}

/** Run a lazily imported command and print its result. */
async function run(load: () => Promise<CommandResult>, json: boolean): Promise<void> {
  emit(await load(), json);
}

/** A command not asked for: every call on it (option, action, command...) is ignored and returns it. */
const SKIPPED: Command = new Proxy(() => {}, {
  get: () => SKIPPED,
  apply: () => SKIPPED,
}) as unknown as Command;

/**
 * The command `argv` names, when it could name one: then only that command is built. Each command's
 * options and help are objects made as it is registered, ~35 commands' worth at every start otherwise.
 */
function commandAsked(argv: readonly string[] | undefined): string | undefined {
  const name = argv?.[2];
  return name !== undefined && name !== 'help' && /^[a-z][a-z-]*$/.test(name) ? name : undefined;
}

/**
 * The CLI; with `argv`, only the command it names (none, an option or help: all of them, so help lists
 * every command; a name no command has: all of them, so commander suggests the nearest).
 */
export function buildProgram(opts: { json?: boolean; argv?: readonly string[] } = {}): Command {
  const program = new Command('genjob');
  const only = commandAsked(opts.argv);
  let found = false;
  if (only !== undefined) {
    const add = program.command.bind(program) as (...args: unknown[]) => Command;
    program.command = ((nameAndArgs: string, ...rest: unknown[]) => {
      if (nameAndArgs.split(' ')[0] !== only) return SKIPPED;
      found = true;
      return add(nameAndArgs, ...rest);
    }) as Command['command'];
  }
  if (opts.json) {
    // --version --json: the version as a JSON result, like every command's (this listener runs
    // before the one .version() adds, and ends the parse)
    program.on('option:version', () => {
      process.stdout.write(jsonLine({ ok: true, version: VERSION }));
      throw new CommanderError(0, 'commander.version', VERSION);
    });
  }
  program
    .description('Run model-generated code changes as replayable, verifiable jobs.')
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  genjob mint -m "Add a timeout to fetch_user" src/user.py   write an immutable job; prints its key',
        "  genjob work --drain --generator './gen.sh'                  claim jobs and generate (--host H: over ssh)",
        '  genjob status                                               what is queued, running, received, applied',
        '  genjob verify --all && genjob apply --all                   check and write received jobs here',
        '  genjob pull && genjob verify --commits origin/main..HEAD    the merge gate (CI, any clone)',
        "  genjob mint --each 'src/*.py' -m 'Type {path}' --run hints  one job per file, sealed as a run",
        '  genjob gate --run hints --min-pass 0.95                     decide the run (75 while open)',
        '',
        EXIT_CODES_HELP,
        'Every command but serve takes --json (one JSON result on stdout); all but serve and cache, --root DIR.',
      ].join('\n'),
    )
    // where the docs are, as an absolute path: after a global install "docs/ in the package" is hard to find
    .addHelpText('after', () => `Docs: ${join(packageRoot(), 'docs')} (start with cli.md)`)
    .version(VERSION, '-V, --version')
    .exitOverride()
    .configureOutput({ outputError: (str, write) => write(`genjob: ${str}`) })
    .helpCommand(false);

  common(program.command('init'))
    .description('create .gen/ and make .gitignore ignore it')
    .action(async (_opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/init.js')).init(o), !!o.json);
    });

  common(program.command('mint'))
    .description(
      'mint a job: an instruction plus the files the generator may change (prints its key on stdout, one key per job with --each; what it did goes to stderr)',
    )
    .argument(
      '[paths...]',
      'files the generator may change, relative to the current directory (they must exist; see --create)',
    )
    .option('-m, --message <text>', 'the instruction')
    .option(
      '-f, --file <path>',
      'read the instruction from a file (- for stdin); at most 131,052 bytes, as a generator gets it in its environment',
    )
    .option('--create <path>', 'a file the generator is to create (must not exist yet); repeatable', collect)
    .option('--allow-secret <path>', 'ship this path even though it looks like a secret; repeatable', collect)
    .option('--allow-hardlinks', 'ship inputs that have more than one hard link (refused by default)')
    .option(
      '--read <path>',
      'ship this file for context only: hashed into the key, never an output (a receipt changing it is rejected); repeatable',
      collect,
    )
    .option(
      '--each <glob>',
      'one job per git-tracked file matching GLOB (relative to the root; ** crosses directories), in sorted order',
    )
    .option(
      '--each-file <file>',
      'one job per path FILE lists, one a line (- for stdin); each must be tracked',
    )
    .option(
      '--also <template>',
      'with --each: another path each job may change, {path} {dir} {name} {stem} expanded (created when missing); repeatable',
      collect,
    )
    .option(
      '--run <name>',
      'seal the minted keys as run NAME (.gen/runs/NAME.json, your seal beside it: gate and apply act only on runs you minted); the same mint again is a no-op, NAME@2 a new revision',
    )
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  genjob mint -m "Add a timeout to fetch_user" src/user.py tests/test_user.py',
        '  genjob mint -f task.md --create src/new_module.py src/user.py',
        '  genjob mint -m "Use the types in src/types.py" --read src/types.py src/user.py',
        "  genjob mint --each 'src/**/*.py' -m 'Add type hints to {path}; keep behaviour' --run hints",
        "  genjob mint --each 'src/*.py' --also '{dir}/test_{stem}.py' --read src/types.py -m 'Test {name}' --run t",
        '  genjob mint --each-file paths.txt -f instruction.md --run hints@2',
        '',
        'In the instruction and --also, {path} is the matched file (src/pkg/mod.py), {dir} its directory',
        '(src/pkg, . at the root), {name} its file name (mod.py), {stem} the name without extension (mod).',
      ].join('\n'),
    )
    .action(async (paths: string[], _opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/mint.js')).mint({ ...o, paths }), !!o.json);
    });

  sandboxOptions(common(program.command('work')))
    .description('claim queued jobs, ship each to `genjob serve` (here or over ssh), and store the results')
    .argument('[keys...]', 'work only these jobs (keys or prefixes; without a mode: --drain of them)')
    .option('--once', 'work one job, then stop')
    .option('--drain', 'work jobs until the queue is empty')
    .option('--watch', 'keep working as jobs arrive, until SIGINT/SIGTERM')
    .option('--generator <command>', 'shell command run in the workspace (or builtin:openai)')
    .option('--concurrency <n>', 'jobs in flight at once (per host)', positiveInt('--concurrency'), 1)
    .option('--timeout <seconds>', 'generator time limit per job (at most a week)', seconds, 600)
    .option('--lease-ttl <seconds>', 'a lease whose heartbeat is older than this is reaped', seconds, 60)
    .option(
      '--max-attempts <n>',
      'attempts per job before it goes to dead/',
      positiveInt('--max-attempts'),
      3,
    )
    .option(
      '--max-tokens <n>',
      'stop claiming once the receipts of this run report this many tokens',
      positiveInt('--max-tokens'),
    )
    .option(
      '--host <[N/][user@]host>',
      'generate on this host over ssh, N jobs at once (default --concurrency); repeatable: a pool',
      collect,
    )
    .option(
      '--launch <[N/]command>',
      'run this command through sh -c to start serve (srun, kubectl exec -i, podman run -i); repeatable',
      collect,
    )
    .option(
      '--launch-env <NAME>',
      "pass this variable of the worker's environment to the --launch command (repeatable; it gets only PATH, HOME, USER, the locale, ssh's agent and these)",
      collect,
    )
    .option(
      '--in-doubt-after <seconds>',
      'a job whose host died after delivery waits this long for that host before another replays it',
      seconds,
      300,
    )
    .option(
      '--host-backoff <seconds>',
      'how long a host that failed is left alone before it is tried again; doubled after each failure in a row, up to 60 s (after 7 in a row the host takes no more jobs this run)',
      secondsUpTo(60),
      1,
    )
    .option('--port <port>', 'ssh port', positiveInt('--port'))
    .option('--identity <file>', 'ssh private key', path)
    .option('--remote-cmd <command>', 'how to start serve on the host', 'genjob serve --session')
    .option('--ssh-option <KEY=VALUE>', 'extra ssh -o option; repeatable', collect)
    .option('--ssh-config <file>', 'ssh client config file (default: ~/.ssh/config)', path)
    .option('--quiet', 'no progress lines, no generator output')
    .option(
      '--grace <seconds>',
      'with --watch: after SIGINT/SIGTERM, how long jobs in flight may finish before they are requeued (a second Ctrl-C: at once)',
      seconds,
      30,
    )
    .option(
      '--fail-on-error',
      'exit 3 if any job this run took ended with an aborted or rejected receipt (for CI)',
    )
    .option(
      '--retry-aborted',
      'generate again where the host holds an aborted result for a job (default: reuse it)',
    )
    // batch generation (builtin:openai through the provider's batch endpoint)
    .option('--batch', 'submit the queued jobs as one provider batch (with --generator builtin:openai)')
    .option('--batch-poll', 'check open batches; store the answers of finished ones')
    .option('--batch-size <n>', 'with --batch: jobs per batch at most', positiveInt('--batch-size'), 1000)
    .option(
      '--batch-poll-interval <seconds>',
      'with --watch: how often open batches are checked',
      seconds,
      60,
    )
    .addHelpText(
      'after',
      '\nExamples:\n  genjob work --once --generator \'my-coding-cli --message "$GENJOB_INSTRUCTION"\'\n  genjob work --drain --host gen@free-box --generator ./gen.sh\n  genjob work --watch --concurrency 4 --host free-box --ssh-option ProxyJump=bastion\n  genjob work --batch --generator builtin:openai && genjob work --batch-poll\n  genjob work --run hints --concurrency 4 --generator ./gen.sh   # the queued jobs of run hints',
    )
    // shadow plane: run existing jobs again against another generator, never touching live state
    .option(
      '--shadow <name>',
      'run existing jobs again in shadow plane NAME (results under .gen/shadow/NAME/)',
    )
    .option('--all', 'with --shadow: every queued, received and applied job')
    .option(
      '--run <name>',
      "work run NAME's queued jobs (as --drain of their keys); with --shadow: run NAME's jobs that are not running",
    )
    .action(async (keys: string[], _opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      // given at all, even empty (`--shadow "$PLANE"` with PLANE unset): a shadow run, never live work;
      // shadowWork refuses the empty name
      if (o.shadow !== undefined) {
        // the config file's host, ssh and launch settings hold for a shadow run as for live work
        await run(async () => {
          const { withWorkConfig } = await import('./config-file.js');
          return (await import('../commands/shadow-work.js')).shadowWork(
            withWorkConfig(cmd, { ...o, keys }) as never,
          );
        }, !!o.json);
        return;
      }
      if (o.all) {
        const { UsageError } = await import('../core/errors.js');
        throw new UsageError(
          'EGJ_USAGE',
          '--all goes with --shadow NAME; live work takes jobs from the queue',
        );
      }
      await run(async () => {
        const { withWorkConfig } = await import('./config-file.js');
        return (await import('../commands/work.js')).work(withWorkConfig(cmd, { ...o, keys }) as never);
      }, !!o.json);
    });

  sandboxOptions(program.command('serve'))
    .description('answer bundles on stdin/stdout (run by `work`, locally or on the generator host over ssh)')
    .option('--session', 'answer requests until stdin closes (the default; accepted for clarity)')
    .option('--generator <command>', 'pin the generator this host runs (requests naming another are refused)')
    .option('--cache-dir <dir>', 'where results are kept by key (default: $XDG_CACHE_HOME/genjob)', path)
    .option('--sign-key <file>', 'sign every receipt with this ed25519 key (see genjob keygen)', path)
    .option(
      '--gc-older-than <duration>',
      'on start, prune cache entries older than this (as genjob cache prune)',
    )
    .option(
      '--check-generator [command]',
      'say in the hello whether this generator (none given: the pinned one) would run; work passes it',
    )
    .option(
      '--worker-repo <dir>',
      'the repository of the worker that started this serve on its own machine (work passes it): generators never see it through the system directories (/opt, /usr)',
    )
    .action(async (opts, cmd: Command) => {
      // no config file (a bare free box): serve's hello goes out before zod's schemas are loaded
      const { userConfigFile } = await import('./user-config-path.js');
      const { pathExists } = await import('../core/path-exists.js');
      const o = pathExists(userConfigFile())
        ? (await import('./config-file.js')).withServeConfig(cmd, opts)
        : opts;
      await (await import('../commands/serve.js')).serve(o);
    });

  common(program.command('verify'))
    .description(
      "check a job's receipt and bytes against the verify rules (docs/exit-codes.md); exit 3 naming the rule broken",
    )
    .argument('[key]', 'a key or a unique prefix (4+ characters)')
    .option('--all', 'verify every received job (each is tried; the exit code is the worst)')
    .option('--run <name>', 'verify every job of run NAME that has a receipt (each is tried)')
    .option('--stop-on-first', 'with --all or --run: stop at the first job that fails')
    .option('--require-signature', 'reject unsigned receipts even when no key is trusted')
    .option(
      '--require-sandbox',
      'reject receipts whose generator ran unconfined (--no-sandbox, or no record)',
    )
    .option('--commits <range>', 'the merge gate: check every commit in RANGE with a Genjob-Key trailer')
    .option(
      '--require-genjob <pathspec>',
      'with --commits: fail commits touching PATHSPEC without a trailer; repeatable',
      collect,
    )
    .option(
      '--require-check <name>',
      'with --commits: every generated commit needs a current pass record of this checker for exactly its tree; repeatable',
      collect,
    )
    .option(
      '--trust-ref <ref>',
      "with --commits: read the gate's policy (genjob-trust.json) from this commit, not the range's base (an ambiguous short name is refused: in CI, refs/remotes/origin/main)",
    )
    .option(
      '--trust-file <path>',
      "with --commits: use this trust file, not the range's base's genjob-trust.json",
    )
    .addHelpText(
      'after',
      "\nExamples:\n  genjob verify 3f2a9c1b\n  genjob verify --all                 every received job, a summary of each failure\n  genjob verify --run hints --stop-on-first\n  genjob pull && genjob verify --commits origin/main..HEAD --require-genjob src/\n  genjob verify --commits 'HEAD --not --remotes=origin' --trust-ref origin/main",
    )
    .action(async (key: string | undefined, _opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/verify.js')).verify({ ...o, key }), !!o.json);
    });

  common(program.command('check'))
    .description(
      "run checkers (tests, a linter, a model judge) confined on HEAD plus a job's outputs; write a check record per job and checker",
    )
    .argument('[keys...]', 'jobs to check (keys or unique prefixes of 4+ characters)')
    .option('--all', 'check every received job')
    .option(
      '--run <name>',
      "check run NAME's jobs that have an ok receipt (what its gate's --require-check waits on)",
    )
    .option(
      '--checker <name>',
      'run only this checker (repeatable; default: every checker genjob.config.json declares)',
      collect,
    )
    .option(
      '--attempts <n>',
      'attempts per checker in this run; stops at the first pass',
      positiveInt('--attempts'),
    )
    .option(
      '--recheck',
      'add attempts to the current record instead of answering from it (a pass after a fail is flaky, never pass)',
    )
    .option('--concurrency <n>', 'checks run at once', positiveInt('--concurrency'), 1)
    .option('--list', 'print every declared checker with its binding digest at HEAD; run nothing')
    .option('--sign-key <file>', 'sign each record with this ed25519 key (default: $GENJOB_SIGN_KEY)', path)
    .option(
      '--no-sandbox',
      'run checker commands unconfined (no bubblewrap); records say sandbox kind "none"',
    )
    .option(
      '--sandbox-user <user>',
      'USER, UID or USER:GID a check run as root runs checker commands as (default: nobody; root keeps the sandbox root, weaker: see docs/trust.md)',
    )
    .addHelpText(
      'after',
      '\nExamples:\n  genjob check --list\n  genjob check 277c --checker tests\n  genjob check --all --concurrency 2 && genjob apply --all --require-check tests\n  genjob check 277c --recheck --attempts 3     (more attempts on the same record: ✗✓ is flaky)\n  genjob check --run hints && genjob gate --run hints --require-check tests',
    )
    .action(async (keys: string[], _opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/check.js')).check({ ...o, keys }), !!o.json);
    });

  common(program.command('apply'))
    .description('verify again, then write the outputs into the repository (atomic, idempotent)')
    .argument('[key]', 'a key or a unique prefix (4+ characters)')
    .option('--all', 'apply every received job (each is tried, like make -k; the exit code is the worst)')
    .option('--run <name>', 'apply every received job of run NAME (each is tried)')
    .option(
      '--gated',
      "with --run: apply exactly the jobs the run's current closed gate accepted (genjob gate)",
    )
    .option('--stop-on-first', 'with --all or --run: stop at the first job that fails')
    .option(
      '--remint-stale',
      'with --all or --run: remint every stale job met, so its successor is generated next',
    )
    .option('--dry-run', 'print what would change; write nothing')
    .option('--diff', 'print a unified diff of what was written (with --dry-run: of what would be)')
    .option('--require-signature', 'reject unsigned receipts even when no key is trusted')
    .option(
      '--require-sandbox',
      'reject receipts whose generator ran unconfined (--no-sandbox, or no record)',
    )
    .option(
      '--commit',
      'then make one git commit per job holding exactly its outputs, with Genjob-* trailers (an applied job without its commit gets it; with --all, every applied job is looked at)',
    )
    .option(
      '--require-check <name>',
      'refuse a job (exit 3) unless this checker has a current pass record for it (repeatable; see genjob check)',
      collect,
    )
    .option('--allow-flaky', 'with --require-check: accept a flaky record (its attempts disagree) as a pass')
    .action(async (key: string | undefined, _opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/apply.js')).apply({ ...o, key }), !!o.json);
    })
    .addHelpText(
      'after',
      '\nExamples:\n  genjob apply 3f2a9c1b --diff\n  genjob apply --all --remint-stale     apply what applies; stale jobs get successors\n  genjob apply --run hints --stop-on-first\n  genjob gate --run hints && genjob apply --run hints --gated --commit',
    );

  common(program.command('revert'))
    .description(
      'put back the bytes an applied job replaced (refused if the files changed since); the job is then reverted',
    )
    .argument('<key>', 'a key or a unique prefix')
    .option(
      '--commit',
      'then commit the restored files as a revert of the generated commit (Genjob-Revert trailers)',
    )
    .addHelpText(
      'after',
      '\nExamples:\n  genjob revert 277c            put the files back; the generated commit stays, the changes are uncommitted\n  genjob revert 277c --commit   put them back and commit that, as git revert would',
    )
    .action(async (key: string, _opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/revert.js')).revert({ ...o, key }), !!o.json);
    });

  common(program.command('drop'))
    .description('give up on queued, received or reverted jobs: each file, receipt and outputs move to dead/')
    .argument('[keys...]', 'keys or unique prefixes (several: each is tried, the exit code is the worst)')
    .option('--reason <text>', 'why (kept in dead/ and the journal)')
    .option('--run <name>', 'every queued, received or reverted job of run NAME (others are skipped)')
    .addHelpText(
      'after',
      '\nExamples:\n  genjob drop 3f2a9c1b 77aa01de --reason "not needed"\n  genjob drop --run hints',
    )
    .action(async (keys: string[], _opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/drop.js')).drop({ ...o, keys }), !!o.json);
    });

  // shadow plane: compare two planes' answers; promote a shadow answer through the live path
  common(program.command('compare'))
    .description(
      'per job, live vs a shadow plane (or two shadow planes): identical, differs, aborted, rejected, missing',
    )
    .argument('[keys...]', 'jobs to compare (default: every job either side answered)')
    .option('--shadow <name>', 'a shadow plane; once: live vs it, twice: the first vs the second', collect)
    .option('--diff', "print each differing job's unified diff, from the first side's answer to the second's")
    .addHelpText(
      'after',
      '\nExamples:\n  genjob compare --shadow b            live vs shadow:b, one line per job\n  genjob compare --shadow b --diff 277c   and the diff of what each side wrote',
    )
    .action(async (keys: string[], _opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/compare.js')).compare({ ...o, keys }), !!o.json);
    });

  common(program.command('promote'))
    .description(
      "make a shadow plane's answer the live one: requeue the job live with that plane's generator",
    )
    .argument('<key>', 'a key or a unique prefix')
    .requiredOption('--shadow <name>', 'the shadow plane whose answer to promote (required)')
    .addHelpText(
      'after',
      [
        '',
        'The pin it writes (.gen/promoted/<key>.json) names the generator and sandbox flags of your',
        '`work --shadow` run and is sealed under your secret ($XDG_CACHE_HOME/genjob): `work` follows',
        'only a pin you sealed, never one committed on a branch or copied from another store.',
        '',
        'Example:',
        '  genjob work --shadow b --generator ./other-gen.sh KEY   run the job again beside the live plane',
        '  genjob compare --shadow b KEY                           see how the answers differ',
        '  genjob promote --shadow b KEY && genjob work --once     generate it live with that generator',
      ].join('\n'),
    )
    .action(async (key: string, _opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(
        async () => (await import('../commands/promote.js')).promote({ ...o, key } as never),
        !!o.json,
      );
    });

  // retention: prune finished jobs' material, leaving tombstones; and the host's result cache
  common(program.command('gc'))
    .description('remove the bulky material of jobs finished before the window; leave a tombstone per key')
    .option('--older-than <duration>', 'retention window: a number and s, m, h, d or w', '30d')
    .option('--dry-run', 'print what would be pruned and its size; remove nothing')
    .action(async (_opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/gc.js')).gc(o), !!o.json);
    });

  const cache = hostCommon(program.command('cache')).description("the generator host's result cache");
  hostCommon(cache.command('prune'))
    .description(
      'remove cache entries older than the window and leftovers of crashed requests (never one in use)',
    )
    .option('--older-than <duration>', 'retention window: a number and s, m, h, d or w', '30d')
    .option('--dry-run', 'print what would be pruned; remove nothing')
    .option('--cache-dir <dir>', 'the cache (default: $XDG_CACHE_HOME/genjob)', path)
    .action(async (_opts, cmd: Command) => {
      // --json and --debug may be given before or after `prune` (the group takes them too)
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/cache-prune.js')).cachePrune(o), !!o.json);
    });

  common(program.command('retry'))
    .description(
      'send a received job (aborted, rejected, or ok but unwanted) or a dead one (cancelled, out of attempts, in doubt) back to the queue; its next attempt generates again',
    )
    .argument('[keys...]', 'keys or unique prefixes (several: each is tried, the exit code is the worst)')
    .option(
      '--run <name>',
      'every job of run NAME whose receipt is not ok, and its jobs dead/ holds as cancelled, out of attempts or in doubt',
    )
    .addHelpText(
      'after',
      "\nExamples:\n  genjob retry 3f2a9c1b\n  genjob retry --run hints   # the run's failures, generated again",
    )
    .action(async (keys: string[], _opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/retry.js')).retry({ ...o, keys }), !!o.json);
    });

  common(program.command('cancel'))
    .description(
      'stop a queued or running job: it goes to dead/ as cancelled (its worker stands down, its generator is killed)',
    )
    .argument('[keys...]', 'keys or unique prefixes (several: each is tried, the exit code is the worst)')
    .option('--reason <text>', 'why (kept in dead/ and the journal)')
    .option('--run <name>', 'every queued or running job of run NAME')
    .addHelpText(
      'after',
      '\nExamples:\n  genjob cancel 3f2a9c1b --reason "wrong instruction"\n  genjob cancel --run hints',
    )
    .action(async (keys: string[], _opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/cancel.js')).cancel({ ...o, keys }), !!o.json);
    });

  common(program.command('remint'))
    .description(
      'mint the successor of a stale job from the current tree (same instruction and paths, new key); the old one goes to dead/ as superseded',
    )
    .argument('<keys...>', 'keys or unique prefixes')
    .option('--allow-secret <path>', 'ship this path even though it looks like a secret; repeatable', collect)
    .option('--allow-hardlinks', 'ship inputs that have more than one hard link (refused by default)')
    .addHelpText(
      'after',
      '\nExamples:\n  genjob remint 3f2a9c1b   # the job went stale (EGJ_STALE): its successor is queued\n  genjob apply --all --remint-stale   # remint every stale job apply meets',
    )
    .action(async (keys: string[], _opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/remint.js')).remint({ ...o, keys }), !!o.json);
    });

  common(program.command('gate'))
    .description(
      'decide a run: open (exit 75) until every job has a receipt or a dead letter; then its pass rate over all intended jobs, met (0) or not (3)',
    )
    .requiredOption('--run <name>', 'the run (NAME: its newest revision; NAME@N: that one) (required)')
    .option(
      '--require-check <name>',
      'a key passes only with a current pass record of this checker of genjob.config.json (see genjob check); the gate waits for one per ok receipt; repeatable',
      collect,
    )
    .option(
      '--min-pass <fraction>',
      'the least pass rate over the intended jobs: 0.95 or 95% (default 1 when no --max-fail)',
    )
    .option('--max-fail <n>', 'the most jobs that may fail')
    .option('--allow-flaky', 'count a flaky check record as a pass')
    .option('--wait', 'evaluate again every second until the gate closes')
    .option('--timeout <duration>', 'with --wait: stop waiting after this long (30s, 30m, 2h), still exit 75')
    .option(
      '--sign-key <file>',
      'sign the gate record with this ed25519 key (default: $GENJOB_SIGN_KEY)',
      path,
    )
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  genjob gate --run hints                          exit 75 while open (and what it waits for), else 0 or 3',
        '  genjob gate --run hints --min-pass 0.95 --max-fail 3',
        '  genjob check --run hints && genjob gate --run hints --require-check tests',
        '  genjob gate --run hints --require-check tests --allow-flaky --wait --timeout 30m',
        '  genjob gate --run hints && genjob apply --run hints --gated',
        '',
        'Exit codes: 0 met, 3 not met, 75 open (try again later). Wall time never closes a gate.',
        'Only a run your own mint sealed is decided (a manifest from a branch or another machine is',
        'EGJ_RUN_UNSEALED, exit 3): mint the same run here to seal it.',
      ].join('\n'),
    )
    .action(async (_opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/gate.js')).gate(o), !!o.json);
    });

  common(program.command('status'))
    .description(
      'counts per state and a table of the most recent jobs, newest first (key, state, epoch, age, receipt, host, instruction)',
    )
    .option('--state <state>', 'only rows of this state (queue, running, received, applied, reverted, dead)')
    .option(
      '--limit <n>',
      'show at most this many rows (default 50, the most recent)',
      positiveInt('--limit'),
    )
    .option('--all', 'show every row')
    .option('--run <name>', "only run NAME's jobs (successors of reminted ones included)")
    .addHelpText(
      'after',
      '\nExamples:\n  genjob status --state dead\n  genjob status --run hints --all   # every job of run hints',
    )
    .option('--disk', 'also show the size of .gen/ and what `genjob gc` would free (walks all of .gen/)')
    .option(
      '--check <NAME=VALUE>',
      'only jobs whose checker NAME is VALUE: a verdict (pass, fail, flaky, uncertain, error), missing, stale or current (repeatable: all must hold)',
      collect,
    )
    .addOption(
      new Option('--color <when>', 'colour the table: auto (on a terminal, unless NO_COLOR), always, never')
        .choices(['auto', 'always', 'never'])
        .default('auto'),
    )
    .action(async (_opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/status.js')).status(o), !!o.json);
    });

  common(program.command('show'))
    .description('a job: its document, attempts, receipt and journal events')
    .argument('<key>', 'a key or a unique prefix')
    .action(async (key: string, _opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/show.js')).show({ ...o, key }), !!o.json);
    });

  common(program.command('report'))
    .description(
      'write a static review site of the jobs (all, a run, or the keys named): index.html and a page per job',
    )
    .argument('[keys...]', 'only these jobs (keys or prefixes; default: every job)')
    .option('--run <name>', "only the run's intended jobs, with its gate")
    .option('--out <dir>', 'the directory to write (default: .gen/report/)', path)
    .option('--open', 'open the index in a browser ($BROWSER, else xdg-open) when written')
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  genjob report                    every job, into .gen/report/ (prints the index path)',
        '  genjob report --run hints --open  one run with its gate, opened in a browser',
        '  genjob report 3fa9c2 --out /tmp/r  one job, into /tmp/r/',
        '',
        'Pages whose inputs did not change are not written again; no page loads anything from the network.',
      ].join('\n'),
    )
    .action(async (keys: string[], _opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/report.js')).report({ ...o, keys }), !!o.json);
    });

  common(program.command('reap'))
    .description('move running jobs whose lease stopped beating back to the queue')
    .option('--lease-ttl <seconds>', 'a lease older than this is stale', seconds, 60)
    .action(async (_opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/reap.js')).reap(o as never), !!o.json);
    });

  common(program.command('keygen'))
    .description('make an ed25519 signing key for a generator host; prints its public key')
    .requiredOption(
      '--out <file>',
      'where to write the private key (mode 0600; never overwritten) (required)',
      path,
    )
    .action(async (_opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(
        async () =>
          (await import('../commands/keygen.js')).runKeygen({ out: o.out, json: !!o.json, root: o.root }),
        !!o.json,
      );
    });

  const trust = common(program.command('trust')).description(
    'manage the receipt-signing keys this repository trusts',
  );
  common(trust.command('add'))
    .description('trust a host key (written to genjob-trust.json at the root; commit it)')
    .argument('<name>', 'a name for the host')
    .argument('<key>', "the host's public key, ed25519:BASE64")
    .option(
      '--for <use>',
      'what the key is pinned for: receipts (the default) or checks (check records); repeatable',
      collect,
    )
    .action(async (name: string, key: string, _opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/trust-cli.js')).trustAdd(o, name, key), !!o.json);
    });
  common(trust.command('list'))
    .description('list trusted keys')
    .action(async (_opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/trust-cli.js')).trustList(o), !!o.json);
    });
  common(trust.command('remove'))
    .description('stop trusting a key')
    .argument('<name>')
    .action(async (name: string, _opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/trust-cli.js')).trustRemove(o, name), !!o.json);
    });

  const config = common(program.command('config')).description(
    'genjob.config.json: consent for its settings',
  );
  common(config.command('allow'))
    .description(
      "allow this repository's genjob.config.json as it is now: its settings that run commands here (ssh.config, launch, ...) are honoured until it changes",
    )
    .addHelpText(
      'after',
      '\nRead the file (and the ssh config it names) first: allowing it lets it run commands on this machine.\nExamples:\n  genjob config allow\n  genjob config allow --root ../other-repo',
    )
    .action(async (_opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/config.js')).configAllow(o), !!o.json);
    });

  // Receipts travel with the repository: push/pull refs/genjob/, the commit gate's hook.
  common(program.command('push'))
    .description('publish the material of received and applied jobs under refs/genjob/ on a git remote')
    .argument('[remote]', "the git remote (default: the branch's remote, else origin)")
    .option('--key <key>', 'push only this key (or unique prefix); repeatable', collect)
    .action(async (remote: string | undefined, _opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/push.js')).push({ ...o, remote }), !!o.json);
    });
  common(program.command('pull'))
    .description(
      'fetch refs/genjob/ from a git remote for the merge gate; pulled material never becomes a job here',
    )
    .argument('[remote]', "the git remote (default: the branch's remote, else origin)")
    .option(
      '--timeout <duration>',
      'stop the pull after this long in all (30s, 10m, 1h; default 10m): git and all it started are killed, no ref changes, exit 75',
    )
    .option(
      '--max-bytes <size>',
      'refuse a pull whose fetches write more than this in all (their packs; 512K, 64M, 1G; default 1G): nothing kept, exit 3',
      byteSize,
    )
    .addHelpText(
      'after',
      [
        '',
        'What a remote sends is checked before any ref moves: a ref git refuses a malformed object of is',
        'found by fetching the refs by halves, and skipped by itself, nothing of it kept; a pack over',
        '--max-bytes is refused (EGJ_PULL_TOO_LARGE, exit 3); a pull still running at --timeout is stopped',
        '(EGJ_GIT_TIMEOUT, exit 75: try again), nothing fetched kept. A ref skipped, malformed or its',
        'material unusable, is named on stderr (exit 0): only a gate that needs its key fails.',
        '',
        'Examples:',
        '  genjob pull && genjob verify --commits origin/main..HEAD',
        '  genjob pull upstream --timeout 2m',
        '  genjob pull --max-bytes 256M --json',
      ].join('\n'),
    )
    .action(async (remote: string | undefined, _opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/pull.js')).pull({ ...o, remote }), !!o.json);
    });
  const hook = common(program.command('hook')).description('git hooks that run the merge gate');
  common(hook.command('install'))
    .description(
      'write a pre-push hook (or --pre-merge-commit) running `genjob pull` and `genjob verify --commits`',
    )
    .option(
      '--pre-merge-commit',
      'install the pre-merge-commit hook instead of pre-push, and set merge.ff=false (git runs no such hook on a fast-forward)',
    )
    .option('--force', 'replace a hook that is not exactly what genjob wrote')
    .addHelpText(
      'after',
      '\nUndo it with genjob hook uninstall (with --pre-merge-commit, it also puts back the merge.ff it replaced).',
    )
    .action(async (_opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/hook.js')).hookInstall(o), !!o.json);
    });
  common(hook.command('uninstall'))
    .description(
      "remove the pre-push hook (or --pre-merge-commit) genjob wrote; a hook that is not exactly genjob's is kept (exit 4) unless --force",
    )
    .option(
      '--pre-merge-commit',
      'remove the pre-merge-commit hook instead, and put back the merge.ff that hook install replaced, if merge.ff is still the false install set',
    )
    .option(
      '--force',
      'remove the hook even when it is not exactly what genjob wrote (edited by hand, or another)',
    )
    .addHelpText(
      'after',
      [
        '',
        "A hook is genjob's while its bytes are exactly what hook install wrote (its last line sums the",
        'rest). One with a check merged in by hand is yours: uninstall keeps it (EGJ_HOOK_EXISTS, exit 4).',
        'merge.ff is put back only when it is still false: a value you set since stays.',
        '',
        'Examples:',
        '  genjob hook uninstall',
        '  genjob hook uninstall --pre-merge-commit --json',
      ].join('\n'),
    )
    .action(async (_opts, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      await run(async () => (await import('../commands/hook.js')).hookUninstall(o), !!o.json);
    });

  // `help [command]` like commander's, but an unknown command is bad usage that says so (exit 2)
  program
    .command('help')
    .description('display help for a command')
    .argument('[command]', 'the command')
    .action((name: string | undefined) => {
      if (name === undefined) return program.outputHelp();
      const sub = program.commands.find((c) => c.name() === name && c.name() !== 'help');
      if (!sub)
        program.error(`error: unknown command '${name}'`, { code: 'commander.unknownCommand', exitCode: 2 });
      else sub.outputHelp();
    });

  if (only !== undefined) {
    delete (program as Partial<Command>).command; // commander's own again
    if (!found) return buildProgram({ json: opts.json });
  }
  helpHintAfterErrors(program, '');
  return program;
}
