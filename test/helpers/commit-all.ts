// A git repository of whatever a test wrote in `root`: init, add everything, one commit, with a fixed
// identity and no system or user configuration. Returns HEAD's tree id.
import { execa } from 'execa';

const ENV = {
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 't',
  GIT_AUTHOR_EMAIL: 't@t',
  GIT_COMMITTER_NAME: 't',
  GIT_COMMITTER_EMAIL: 't@t',
};

export async function commitAll(root: string): Promise<string> {
  for (const args of [
    ['init', '-q'],
    ['add', '-A'],
    ['commit', '-qm', 'test'],
  ])
    await execa('git', args, { cwd: root, env: ENV });
  return (await execa('git', ['rev-parse', 'HEAD^{tree}'], { cwd: root, env: ENV })).stdout;
}
