// What an exposed path may not touch, decided on real paths (real-path.ts). A bind that is, or lies
// inside, a hidden path (the result cache, the workspaces root, the signing key, an /etc secret)
// would show it whatever is masked; a bind that holds the signing key shows what lies beside it (a
// rotation directory's older keys), and one that holds an /etc secret would rest on masks alone. All
// are refused before serve answers anything. A bind that only holds the cache or the workspaces root
// (not secrets, serve's own state) is allowed: bwrap-argv.ts masks them inside it, and pins their
// parents so a writable bind cannot move them.
import { UsageError } from '../core/errors.js';
import type { SandboxPolicy } from './policy.js';
import { realPath, within } from './real-path.js';

/** Secrets under /etc: masked wherever the sandbox shows them (a directory by an empty tmpfs, a file by /dev/null). */
export const ETC_SECRETS = [
  '/etc/ssh',
  '/etc/shadow',
  '/etc/shadow-',
  '/etc/gshadow',
  '/etc/gshadow-',
  '/etc/sudoers',
  '/etc/sudoers.d',
  '/etc/munge',
  '/etc/ssl/private',
  '/etc/genjob',
];

type Exposed = Pick<SandboxPolicy, 'hidden'> & { secrets?: readonly string[] };

/** Why `path` may not be shown to a generator, or null. */
export function exposureProblem(path: string, policy: Exposed): string | null {
  const real = realPath(path);
  const is = real === path ? '' : ` (it is ${real})`;
  for (const h of [...ETC_SECRETS, ...policy.hidden]) {
    const hidden = realPath(h);
    if (within(real, hidden))
      return `${path}${is} is or lies inside ${hidden}, which serve keeps hidden from generators`;
  }
  for (const s of policy.secrets ?? []) {
    for (const secret of new Set([realPath(s), s]))
      if (within(secret, real))
        return `${path}${is} holds the signing key ${secret}, and whatever lies beside it`;
  }
  // a bind of /etc would only be safe while every mask over its secrets holds: refuse it outright
  for (const e of ETC_SECRETS) {
    const secret = realPath(e);
    if (within(secret, real))
      return `${path}${is} holds ${secret}, a host secret serve keeps hidden from generators`;
  }
  return null;
}

/** Refuse (EGJ_BIND_HIDDEN, exit 2) a --generator-bind or --generator-bind-rw that would expose a hidden path. */
export function checkExposure(policy: SandboxPolicy): void {
  const flagged = [
    ...policy.binds.map((p) => ['--generator-bind', p] as const),
    ...policy.bindsRw.map((p) => ['--generator-bind-rw', p] as const),
  ];
  for (const [flag, p] of flagged) {
    const problem = exposureProblem(p, policy);
    if (problem !== null)
      throw new UsageError(
        'EGJ_BIND_HIDDEN',
        `${flag} ${problem}; expose a path that neither holds nor lies inside what serve hides`,
      );
  }
}
