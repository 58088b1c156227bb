import { describe, expect, it } from 'vitest';
import { parseChecker, parseCheckers } from '../../src/check/checker.js';

const F = '/r/genjob.config.json';
const err = (name: string, raw: unknown) => {
  try {
    parseChecker(name, raw, F);
  } catch (e) {
    return `${(e as { code: string }).code}: ${(e as Error).message}`;
  }
  return 'no error';
};

describe('parseChecker', () => {
  it('fills a command checker’s defaults', () => {
    expect(parseChecker('tests', { run: 'npm test' }, F)).toEqual({
      kind: 'command',
      name: 'tests',
      run: 'npm test',
      setup: null,
      timeout_s: 600,
      attempts: 1,
      network: false,
      env: [],
      pin: null,
    });
  });

  it('normalises: timeouts in seconds, env and pin sorted and deduplicated', () => {
    const c = parseChecker(
      'lint',
      {
        run: 'x',
        setup: 'npm ci',
        timeout: '2m',
        attempts: 3,
        network: true,
        env: ['B', 'A', 'B'],
        pin: ['b.lock', 'a.lock', 'b.lock'],
      },
      F,
    );
    expect(c).toMatchObject({
      setup: 'npm ci',
      timeout_s: 120,
      attempts: 3,
      network: true,
      env: ['A', 'B'],
      pin: ['a.lock', 'b.lock'],
    });
    expect(parseChecker('t', { run: 'x', timeout: '90s' }, F)).toMatchObject({ timeout_s: 90 });
    expect(parseChecker('t', { run: 'x', timeout: '1h' }, F)).toMatchObject({ timeout_s: 3600 });
    expect(parseChecker('t', { run: 'x', timeout: 2.5 }, F)).toMatchObject({ timeout_s: 2.5 });
    // the shortest and the longest, spelt either way: a second, a week
    expect(parseChecker('t', { run: 'x', timeout: '1s' }, F)).toMatchObject({ timeout_s: 1 });
    expect(parseChecker('t', { run: 'x', timeout: 1 }, F)).toMatchObject({ timeout_s: 1 });
    expect(parseChecker('t', { run: 'x', timeout: '168h' }, F)).toMatchObject({ timeout_s: 604_800 });
    expect(parseChecker('t', { run: 'x', timeout: 604_800 }, F)).toMatchObject({ timeout_s: 604_800 });
  });

  it('fills a judge’s defaults (3 samples, quorum 2)', () => {
    expect(parseChecker('review', { judge: 'builtin:openai', model: 'm', rubric: 'docs/r.md' }, F)).toEqual({
      kind: 'judge',
      name: 'review',
      judge: 'builtin:openai',
      model: 'm',
      rubric: 'docs/r.md',
      samples: 3,
      quorum: 2,
      params: {},
      timeout_s: 120,
    });
    expect(
      parseChecker('r', { judge: 'builtin:openai', model: 'm', rubric: 'r', samples: 1 }, F),
    ).toMatchObject({ samples: 1, quorum: 1 });
  });

  const refusals: Array<{ name: string; checker: string; raw: unknown; error: RegExp }> = [
    {
      name: 'an unknown key',
      checker: 't',
      raw: { run: 'x', atempts: 2 },
      error: /^EGJ_CONFIG: \/r\/genjob.config.json: "checkers.t": unknown key "atempts"$/,
    },
    { name: 'no run', checker: 't', raw: {}, error: /^EGJ_CONFIG: .*"checkers.t.run": / },
    {
      name: 'a bad name',
      checker: 'Tests!',
      raw: { run: 'x' },
      error: /"checkers.Tests!": a checker name is 1-64 of \[a-z0-9._-\]/,
    },
    { name: 'a name that starts with a dot', checker: '.t', raw: { run: 'x' }, error: /a checker name/ },
    { name: 'attempts 0', checker: 't', raw: { run: 'x', attempts: 0 }, error: /"checkers.t.attempts"/ },
    {
      name: 'a timeout without a unit',
      checker: 't',
      raw: { run: 'x', timeout: '10' },
      error: /"checkers.t.timeout"/,
    },
    // "0s" (or 0.0001) timed every run out at once; past ~24 days Node's timer overflowed to 1 ms and
    // did the same, each run recorded as the change failing its check: a number and a unit, one rule
    ...['0s', '169h', '99999h', '604801s', 0, 0.0001, 0.999, -5, 604_801].map((timeout) => ({
      name: `a timeout of ${timeout}, outside 1 s to a week`,
      checker: 't',
      raw: { run: 'x', timeout },
      error: /"checkers.t.timeout": must be at least 1s and at most 604800s \(168h\)/,
    })),
    {
      name: 'a judge timeout past a week',
      checker: 'r',
      raw: { judge: 'builtin:openai', model: 'm', rubric: 'r', timeout: '200h' },
      error: /"checkers.r.timeout": must be at least 1s/,
    },
    {
      name: 'a judge timeout under a second',
      checker: 'r',
      raw: { judge: 'builtin:openai', model: 'm', rubric: 'r', timeout: 0.5 },
      error: /"checkers.r.timeout": must be at least 1s/,
    },
    // no process can be started with a NUL in its command line: it was an internal error at check time
    {
      name: 'a run holding a NUL',
      checker: 't',
      raw: { run: 'true\0x' },
      error: /"checkers.t.run": holds a NUL/,
    },
    {
      name: 'a setup holding a NUL',
      checker: 't',
      raw: { run: 'true', setup: 'make\0x' },
      error: /"checkers.t.setup": holds a NUL/,
    },
    {
      name: 'a pin outside the repository',
      checker: 't',
      raw: { run: 'x', pin: ['../etc/passwd'] },
      error: /"checkers.t.pin.0": not a relative path/,
    },
    {
      name: 'a secret env name',
      checker: 't',
      raw: { run: 'x', env: ['SSH_AUTH_SOCK'] },
      error: /"checkers.t.env": SSH_AUTH_SOCK: a host secret or control/,
    },
    {
      name: 'a malformed env name',
      checker: 't',
      raw: { run: 'x', env: ['A B'] },
      error: /"checkers.t.env": "A B": not an environment name/,
    },
    {
      name: 'another judge',
      checker: 'r',
      raw: { judge: 'builtin:other', model: 'm', rubric: 'r' },
      error: /"checkers.r.judge"/,
    },
    {
      name: 'a judge with run',
      checker: 'r',
      raw: { judge: 'builtin:openai', model: 'm', rubric: 'r', run: 'x' },
      error: /unknown key "run"/,
    },
    {
      name: 'a judge without a rubric',
      checker: 'r',
      raw: { judge: 'builtin:openai', model: 'm' },
      error: /"checkers.r.rubric"/,
    },
    {
      name: 'a quorum of half the samples',
      checker: 'r',
      raw: { judge: 'builtin:openai', model: 'm', rubric: 'r', samples: 4, quorum: 2 },
      error: /quorum 2 of 4 sample\(s\): it must be more than half of the samples and at most all of them/,
    },
    {
      name: 'a quorum above the samples',
      checker: 'r',
      raw: { judge: 'builtin:openai', model: 'm', rubric: 'r', samples: 3, quorum: 4 },
      error: /quorum 4 of 3/,
    },
    {
      name: 'params that set the model',
      checker: 'r',
      raw: { judge: 'builtin:openai', model: 'm', rubric: 'r', params: { model: 'x' } },
      error: /"checkers.r.params.model": set by genjob, not by params/,
    },
    {
      name: 'params that set the messages',
      checker: 'r',
      raw: { judge: 'builtin:openai', model: 'm', rubric: 'r', params: { messages: [] } },
      error: /params.messages/,
    },
    { name: 'not an object', checker: 't', raw: 'npm test', error: /^EGJ_CONFIG: .*"checkers.t"/ },
  ];
  for (const c of refusals)
    it(`refuses ${c.name}`, () => {
      expect(err(c.checker, c.raw)).toMatch(c.error);
    });

  it('accepts a quorum of all samples and params the judge may set', () => {
    expect(
      parseChecker(
        'r',
        {
          judge: 'builtin:openai',
          model: 'm',
          rubric: 'r',
          samples: 3,
          quorum: 3,
          params: { temperature: 0 },
        },
        F,
      ),
    ).toMatchObject({
      quorum: 3,
      params: { temperature: 0 },
    });
    expect(
      parseChecker('r', { judge: 'builtin:openai', model: 'm', rubric: 'r', samples: 5, quorum: 3 }, F),
    ).toMatchObject({ quorum: 3 });
  });
});

describe('parseCheckers', () => {
  it('is every entry, sorted by name; none without "checkers"', () => {
    expect(parseCheckers({ z: { run: 'a' }, a: { run: 'b' } }, F).map((c) => c.name)).toEqual(['a', 'z']);
    expect(parseCheckers(undefined, F)).toEqual([]);
  });
});
