// The commander tree a run builds: only the command its argv names (each command's options and help
// texts are objects made as it is registered), and every command whenever help could list them or a
// misspelt name needs its nearest match.
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/program.js';

const names = (argv: string[]) =>
  buildProgram({ argv: ['node', 'genjob', ...argv] }).commands.map((c) => c.name());
const every = buildProgram().commands.map((c) => c.name());

describe('buildProgram', () => {
  it('builds only the command argv names, with its subcommands and options', () => {
    expect(names(['show', 'abcd'])).toEqual(['show']);
    expect(names(['push', '--json', 'origin'])).toEqual(['push']);
    const trust = buildProgram({ argv: ['node', 'genjob', 'trust', 'list'] }).commands;
    expect(trust.map((c) => c.name())).toEqual(['trust']);
    expect(trust[0]!.commands.map((c) => c.name())).toEqual(['add', 'list', 'remove']);
    const show = buildProgram({ argv: ['node', 'genjob', 'show', 'abcd'] }).commands[0]!;
    expect(show.options.map((o) => o.long)).toEqual(['--root', '--json', '--debug']);
  });

  it('builds every command for help, an option first, no command, or a name no command has', () => {
    expect(every.length).toBeGreaterThan(20);
    for (const argv of [[], ['--help'], ['help', 'show'], ['-V'], ['shw'], ['Show']])
      expect(names(argv)).toEqual(every);
  });

  it('builds the same command, options and help text alone as in the whole tree', () => {
    for (const name of every.filter((n) => n !== 'help')) {
      const alone = buildProgram({ argv: ['node', 'genjob', name] }).commands;
      const whole = buildProgram().commands.find((c) => c.name() === name)!;
      expect(alone.length).toBe(1);
      expect(alone[0]!.helpInformation()).toBe(whole.helpInformation());
    }
  });

  it('prints at most one Examples section in any command’s help', () => {
    for (const cmd of buildProgram().commands) {
      let text = '';
      cmd.configureOutput({ writeOut: (s) => (text += s), writeErr: (s) => (text += s) });
      cmd.outputHelp();
      expect(text.match(/^Examples:/gm)?.length ?? 0, cmd.name()).toBeLessThanOrEqual(1);
    }
  });
});
