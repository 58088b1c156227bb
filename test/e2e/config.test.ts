// genjob.config.json: work's defaults from the repository root, then from the user's own config file;
// flags override; unknown keys and wrong types are refused naming the file and the key, before anything
// is claimed; "hosts" is a pool. A repository's setting that runs a command here or widens the sandbox
// (ssh.config, no_sandbox, generator_env...) is refused until `genjob config allow`, and again once the
// file (or the ssh config it names) changes; the user's own file and flags need no consent.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useSshd } from '../helpers/sshd.js';
import { genDir, makeSandbox, mintKey } from './helpers.js';
import { mintMany, sshHostBlock } from './pool-helpers.js';
import { genjob, journal, remoteServe, sandbox, genDir as sshGenDir } from './ssh-helpers.js';

/** genjob()'s environment with the user's own config and state kept in the test's directory. */
function userEnv(sb: { dir: string; repo: string; workerCache: string }) {
  return {
    env: {
      XDG_CACHE_HOME: sb.workerCache,
      NO_COLOR: '1',
      GENJOB_GENERATOR_BIND_RW: dirname(sb.repo),
      XDG_CONFIG_HOME: join(sb.dir, 'config'),
      XDG_STATE_HOME: join(sb.dir, 'state'),
    },
  };
}

/** Write the user's own config file (~/.config/genjob/config.json) of the test. */
function userConfig(sb: { dir: string }, body: unknown): void {
  mkdirSync(join(sb.dir, 'config', 'genjob'), { recursive: true });
  writeFileSync(join(sb.dir, 'config', 'genjob', 'config.json'), JSON.stringify(body));
}

describe('genjob.config.json', () => {
  it('gives work its generator; a flag overrides it', async () => {
    const sb = await makeSandbox();
    const fromConfig = sb.script('config-gen.sh', 'echo "# from config" >> README.md');
    const fromFlag = sb.script('flag-gen.sh', 'echo "# from flag" >> README.md');
    writeFileSync(
      join(sb.repo, 'genjob.config.json'),
      JSON.stringify({ generator: fromConfig, timeout: 30 }),
    );
    const a = await mintKey(sb, 'One', ['README.md']);
    expect((await sb.genjob(['work', '--once', '--quiet'])).exitCode).toBe(0);
    expect(readFileSync(join(sb.repo, '.gen', 'out', a, 'README.md'), 'utf8')).toMatch(/# from config\n$/);
    const b = await mintKey(sb, 'Two', ['README.md']);
    expect((await sb.genjob(['work', '--once', '--quiet', '--generator', fromFlag])).exitCode).toBe(0);
    expect(readFileSync(join(sb.repo, '.gen', 'out', b, 'README.md'), 'utf8')).toMatch(/# from flag\n$/);
  });

  const bad = [
    { name: 'an unknown key', body: { generatr: 'x' }, rule: 'unknown key "generatr"' },
    { name: 'an unknown ssh key', body: { ssh: { prot: 22 } }, rule: 'unknown key "ssh.prot"' },
    { name: 'a wrong type', body: { concurrency: 'four' }, rule: '"concurrency": ' },
    // what no host takes: every request would be refused, and the job tried again and again; past ~24.8
    // days Node's timers fire at once
    // no process can be started with it (ssh's argv): it was an internal error
    { name: 'a host holding a NUL', body: { host: 'a\0b' }, rule: '"host": holds a NUL character' },
    ...['timeout', 'grace', 'lease_ttl', 'in_doubt_after'].map((key) => ({
      name: `a ${key} past a week`,
      body: { [key]: 604_801 },
      rule: `"${key}": Too big: expected number to be <=604800`,
    })),
  ];
  for (const c of bad) {
    it(`refuses ${c.name} (exit 2), claiming nothing`, async () => {
      const sb = await makeSandbox();
      const file = join(sb.repo, 'genjob.config.json');
      writeFileSync(file, JSON.stringify(c.body));
      const key = await mintKey(sb, 'One', ['README.md']);
      const r = await sb.genjob(['work', '--once', '--generator', 'true']);
      expect(r.exitCode).toBe(2);
      expect(r.stderr.startsWith(`genjob: EGJ_CONFIG: ${file}: ${c.rule}`)).toBe(true);
      expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
    });
  }
});

describe('genjob.config.json "hosts"', () => {
  // two servers (two aliases of one server share one ssh account and control socket: refused below)
  const servers = [useSshd(), useSshd()];

  /** An ssh client config naming the two servers hA and hB, and hA again as hA2. */
  function twoHosts(dir: string): string {
    const block = sshHostBlock;
    const file = join(dir, 'pool_ssh_config');
    writeFileSync(
      file,
      block('hA', servers[0]!()) + block('hB', servers[1]!()) + block('hA2', servers[0]!()),
    );
    return file;
  }

  const cases = [
    {
      name: '"hosts" feeds work a pool like repeated --host: jobs go to every host of the list',
      hosts: { hosts: ['hA', '2/hB'] },
      expected: ['hA', 'hB'],
    },
    { name: '"host" gives work its one host', hosts: { host: 'hB' }, expected: ['hB'] },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const sb = await sandbox({ 'src/a.txt': 'a\n' });
      try {
        const keys = mintMany(sb, 6);
        const gen = join(sb.dir, 'gen.sh');
        writeFileSync(gen, 'sleep 0.3; echo x >> src/a.txt\n');
        writeFileSync(
          join(sb.repo, 'genjob.config.json'),
          JSON.stringify({ generator: `sh ${gen}`, ...c.hosts }),
        );
        // how to reach the hosts is the user's own (no consent needed): a cache per host, as on separate machines
        userConfig(sb, {
          ssh: {
            config: twoHosts(sb.dir),
            remote_cmd: remoteServe(`${sb.hostCache}/$(echo $SSH_CONNECTION | cut -d' ' -f4)`),
          },
        });
        const r = await genjob(sb, ['work', '--drain', '--json', '--no-sandbox'], userEnv(sb));
        expect(r.exitCode, `${r.stderr}\n${r.stdout}`).toBe(0);
        expect(sshGenDir(sb, 'received')).toEqual(keys.map((k) => `${k}.json`).sort());
        const where = new Set(
          journal(sb)
            .filter((e) => e.event === 'received')
            .map((e) => String(e.destination).replace(/:\d+$/, '')),
        );
        expect([...where].sort()).toEqual(c.expected);
      } finally {
        await sb.cleanup();
      }
    });
  }

  it('refuses two aliases of one account in the pool (exit 2), claiming nothing', async () => {
    const sb = await sandbox({ 'src/a.txt': 'a\n' });
    try {
      const keys = mintMany(sb, 2);
      writeFileSync(join(sb.repo, 'genjob.config.json'), JSON.stringify({ hosts: ['hA', 'hB', 'hA2'] }));
      userConfig(sb, { ssh: { config: twoHosts(sb.dir), remote_cmd: remoteServe(sb.hostCache) } });
      const r = await genjob(sb, ['work', '--drain', '--generator', 'true', '--no-sandbox'], userEnv(sb));
      expect(r.exitCode, r.stderr).toBe(2);
      expect(r.stderr).toMatch(
        /^genjob: EGJ_USAGE: hA and hA2 reach the same account \(.+@127\.0\.0\.1:\d+\); give it once with a slot count \(N\/hA\)/,
      );
      expect(sshGenDir(sb, 'queue')).toEqual(keys.map((k) => `${k}.json`).sort());
    } finally {
      await sb.cleanup();
    }
  });

  it('refuses "host" and "hosts" together (exit 2), claiming nothing', async () => {
    const sb = await makeSandbox();
    const file = join(sb.repo, 'genjob.config.json');
    writeFileSync(file, JSON.stringify({ host: 'a', hosts: ['b'] }));
    const key = await mintKey(sb, 'One', ['README.md']);
    const r = await sb.genjob(['work', '--once', '--generator', 'true']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr.startsWith(`genjob: EGJ_CONFIG: ${file}: "host" and "hosts" both given`)).toBe(true);
    expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
  });
});

describe('a repository config needs consent for what runs commands here', () => {
  const server = useSshd();

  it('refuses a committed ssh.config until allowed (its Match exec never runs), honours it after, refuses it once the ssh config changes', async () => {
    const sb = await sandbox({ 'src/a.txt': 'a\n' });
    try {
      const keys = mintMany(sb, 2);
      const marker = join(sb.dir, 'match-exec-ran');
      mkdirSync(join(sb.repo, 'tools'));
      const sshConfig = join(sb.repo, 'tools', 'ssh_config');
      writeFileSync(sshConfig, `Match exec "touch ${marker}"\n${sshHostBlock('gen', server())}`);
      const gen = join(sb.dir, 'gen.sh');
      writeFileSync(gen, 'echo x >> src/a.txt\n');
      const file = join(sb.repo, 'genjob.config.json');
      writeFileSync(
        file,
        JSON.stringify({
          generator: `sh ${gen}`,
          host: 'gen',
          ssh: { config: 'tools/ssh_config', remote_cmd: remoteServe(sb.hostCache) },
        }),
      );
      const env = userEnv(sb);
      const refused = await genjob(sb, ['work', '--drain', '--no-sandbox'], env);
      expect(refused.exitCode).toBe(2);
      expect(refused.stderr).toBe(
        `genjob: EGJ_CONFIG_NOT_ALLOWED: ${file}: "ssh.config" runs a command on this machine or widens the generator's sandbox; a repository's config may set it only once you have read the file and allowed it: genjob config allow (or give the flag yourself)`,
      );
      expect(existsSync(marker)).toBe(false);
      expect(sshGenDir(sb, 'queue')).toEqual(keys.map((k) => `${k}.json`).sort());

      const allow = await genjob(sb, ['config', 'allow'], env);
      expect(allow.exitCode, allow.stderr).toBe(0);
      expect(allow.stdout).toMatch(
        new RegExp(
          `^allowed ${file} \\(sha256 [0-9a-f]{12}\\): its settings ssh.config, ssh.remote_cmd now apply until it changes$`,
        ),
      );
      const honoured = await genjob(sb, ['work', '--drain', '--no-sandbox'], env);
      expect(honoured.exitCode, honoured.stderr).toBe(0);
      expect(existsSync(marker)).toBe(true);
      expect(sshGenDir(sb, 'received')).toEqual(keys.map((k) => `${k}.json`).sort());

      // the ssh config changes (the allowed file itself does not): consent is gone
      writeFileSync(sshConfig, `${readFileSync(sshConfig, 'utf8')}# one more line\n`);
      const mint = await genjob(sb, ['mint', '--json', '-m', 'a third job', 'src/a.txt'], env);
      const third = JSON.parse(mint.stdout).key as string;
      rmSync(marker);
      const again = await genjob(sb, ['work', '--drain', '--no-sandbox'], env);
      expect(again.exitCode).toBe(2);
      expect(again.stderr).toMatch(
        /^genjob: EGJ_CONFIG_NOT_ALLOWED: .*"ssh\.config" .* allowed it \(it, or a file it names, changed since you allowed it on \d{4}-\d\d-\d\dT[^)]+\): genjob config allow/,
      );
      expect(sshGenDir(sb, 'queue')).toEqual([`${third}.json`]);
      expect(existsSync(marker)).toBe(false);
      // flags are the user's own choice: the repository's values are not used, so not refused
      const own = join(sb.dir, 'own_ssh_config');
      writeFileSync(own, sshHostBlock('gen', server()));
      const flags = ['--ssh-config', own, '--remote-cmd', remoteServe(sb.hostCache)];
      const mine = await genjob(sb, ['work', '--drain', '--no-sandbox', ...flags], {
        ...env,
      });
      expect(mine.exitCode, mine.stderr).toBe(0);
      expect(existsSync(marker)).toBe(false);
    } finally {
      await sb.cleanup();
    }
  });

  it('refuses a committed no_sandbox until allowed, then runs the generator unconfined; --no-sandbox needs no consent', async () => {
    const sb = await makeSandbox();
    const env = { XDG_STATE_HOME: join(sb.base, 'state'), XDG_CONFIG_HOME: join(sb.base, 'config') };
    const gen = sb.script('gen.sh', 'echo "# unconfined" >> README.md');
    const file = join(sb.repo, 'genjob.config.json');
    writeFileSync(file, JSON.stringify({ generator: gen, no_sandbox: true }));
    const a = await mintKey(sb, 'One', ['README.md']);
    const refused = await sb.genjob(['work', '--once', '--quiet'], { env });
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toMatch(new RegExp(`^genjob: EGJ_CONFIG_NOT_ALLOWED: ${file}: "no_sandbox" `));
    expect(genDir(sb, 'queue')).toEqual([`${a}.json`]);
    expect((await sb.genjob(['work', '--once', '--quiet', '--no-sandbox'], { env })).exitCode).toBe(0);
    const b = await mintKey(sb, 'Two', ['README.md']);
    const allow = await sb.genjob(['config', 'allow', '--json'], { env });
    expect(JSON.parse(allow.stdout)).toMatchObject({ ok: true, file, settings: ['no_sandbox'] });
    expect(allow.stdout).toContain(join(sb.base, 'state', 'genjob', 'allowed'));
    expect((await sb.genjob(['work', '--once', '--quiet'], { env })).exitCode).toBe(0);
    const receipt = JSON.parse(readFileSync(join(sb.repo, '.gen', 'receipts', `${b}.json`), 'utf8'));
    expect(receipt.sandbox).toEqual({ kind: 'none', network: true });
  });

  it('takes generator_env and generator_bind from the config once allowed; the user’s own file needs no consent', async () => {
    const sb = await makeSandbox();
    const env = {
      XDG_STATE_HOME: join(sb.base, 'state'),
      XDG_CONFIG_HOME: join(sb.base, 'config'),
      GJ_FLAVOUR: 'vanilla',
    };
    const shared = join(sb.base, 'shared');
    mkdirSync(shared);
    writeFileSync(join(shared, 'style.txt'), 'house style\n');
    const gen = sb.script('gen.sh', `echo "# $GJ_FLAVOUR, $(cat ${shared}/style.txt)" >> README.md`);
    const file = join(sb.repo, 'genjob.config.json');
    writeFileSync(
      file,
      JSON.stringify({ generator: gen, generator_env: ['GJ_FLAVOUR'], generator_bind: [shared] }),
    );
    const a = await mintKey(sb, 'One', ['README.md']);
    const refused = await sb.genjob(['work', '--once', '--quiet'], { env });
    expect(refused.stderr).toMatch(/^genjob: EGJ_CONFIG_NOT_ALLOWED: .*: "generator_env" /);
    expect((await sb.genjob(['config', 'allow'], { env })).exitCode).toBe(0);
    const r = await sb.genjob(['work', '--once', '--quiet'], { env });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(readFileSync(join(sb.repo, '.gen', 'out', a, 'README.md'), 'utf8')).toMatch(
      /# vanilla, house style\n$/,
    );
    // the same settings in the user's own file: no consent asked
    writeFileSync(file, JSON.stringify({ generator: gen }));
    mkdirSync(join(sb.base, 'config', 'genjob'), { recursive: true });
    writeFileSync(
      join(sb.base, 'config', 'genjob', 'config.json'),
      JSON.stringify({ generator_env: ['GJ_FLAVOUR'], generator_bind: [shared] }),
    );
    const b = await mintKey(sb, 'Two', ['README.md']);
    const own = await sb.genjob(['work', '--once', '--quiet'], { env });
    expect(own.exitCode, own.stderr).toBe(0);
    expect(readFileSync(join(sb.repo, '.gen', 'out', b, 'README.md'), 'utf8')).toMatch(
      /# vanilla, house style\n$/,
    );
  });

  it('leaves the ssh settings of a file unused by a local serve; only typed ssh flags need --host', async () => {
    const sb = await makeSandbox();
    const config = join(sb.base, 'config');
    mkdirSync(join(config, 'genjob'), { recursive: true });
    writeFileSync(
      join(config, 'genjob', 'config.json'),
      JSON.stringify({ ssh: { config: '/etc/ssh/ssh_config', port: 2222, options: ['BatchMode=yes'] } }),
    );
    const key = await mintKey(sb, 'One', ['README.md']);
    const r = await sb.genjob(['work', '--once', '--generator', 'true'], {
      env: { XDG_CONFIG_HOME: config },
    });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).not.toContain('need --host');
    expect(genDir(sb, 'received')).toEqual([`${key}.json`]);
    // typed, they are a mistake the user can see
    const typed = await sb.genjob(['work', '--once', '--generator', 'true', '--port', '2222'], {
      env: { XDG_CONFIG_HOME: config },
    });
    expect(typed.exitCode).toBe(2);
    expect(typed.stderr).toContain('--port, --identity, --ssh-option and --ssh-config need --host');
  });

  it('a malformed file: status, show and report look on with a warning naming it; check and work refuse it', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'One', ['README.md']);
    const file = join(sb.repo, 'genjob.config.json');
    writeFileSync(file, '{ "checkers": ');
    const problem = `${file}: not JSON (Unexpected end of JSON input)`;
    for (const command of [['status'], ['show', key], ['report']]) {
      const r = await sb.genjob(command);
      expect(r.exitCode, `${command[0]}: ${r.stderr}`).toBe(0);
      expect(r.stderr).toContain(
        `genjob: warning: ${problem}; ${command[0]} goes on without its checkers (work, check and gate refuse the file until it is fixed)\n`,
      );
    }
    expect(JSON.parse((await sb.genjob(['status', '--json'])).stdout)).toMatchObject({ ok: true });
    for (const command of [
      ['check', '--all'],
      ['work', '--once', '--generator', 'true'],
    ]) {
      const r = await sb.genjob(command);
      expect(r).toMatchObject({ exitCode: 2, stderr: `genjob: EGJ_CONFIG: ${problem}\n` });
    }
    expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
  });

  it('refuses a "serve" section in a repository config (serve reads the user’s own file)', async () => {
    const sb = await makeSandbox();
    const file = join(sb.repo, 'genjob.config.json');
    writeFileSync(file, JSON.stringify({ serve: { no_sandbox: true } }));
    await mintKey(sb, 'One', ['README.md']);
    const r = await sb.genjob(['work', '--once', '--generator', 'true'], {
      env: { XDG_CONFIG_HOME: join(sb.base, 'config') },
    });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toBe(
      `genjob: EGJ_CONFIG: ${file}: "serve" configures genjob serve on a machine; it belongs in the user's own ${join(sb.base, 'config', 'genjob', 'config.json')}\n`,
    );
  });

  it('config allow with no config file is EGJ_CONFIG (exit 2)', async () => {
    const sb = await makeSandbox();
    const r = await sb.genjob(['config', 'allow'], { env: { XDG_STATE_HOME: join(sb.base, 'state') } });
    expect(r).toMatchObject({
      exitCode: 2,
      stderr: `genjob: EGJ_CONFIG: ${join(sb.repo, 'genjob.config.json')}: no such file; nothing to allow\n`,
    });
  });
});
