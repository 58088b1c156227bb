// Fan-out expansion: one work order per matched path. `{path}`, `{dir}`, `{name}` and `{stem}` in the
// instruction and in each --also template become that path's parts; every other brace is left as it
// is, so an instruction may hold code. An expanded --also path is normalised (empty and `.` segments
// dropped), so `{dir}/test_{stem}.py` of a file at the root is `test_<stem>.py`. Pure: no I/O.

export interface PathParts {
  /** The matched path, relative to the repository root: `src/pkg/mod.py`. */
  path: string;
  /** Its directory (`src/pkg`), `.` at the root. */
  dir: string;
  /** Its last segment: `mod.py`. */
  name: string;
  /** The name without its last extension (`mod`); a dot file keeps its whole name (`.env`). */
  stem: string;
}

export function pathParts(path: string): PathParts {
  const cut = path.lastIndexOf('/');
  const name = path.slice(cut + 1);
  const dot = name.lastIndexOf('.');
  return {
    path,
    dir: cut < 0 ? '.' : path.slice(0, cut),
    name,
    stem: dot > 0 ? name.slice(0, dot) : name,
  };
}

const PLACEHOLDER = /\{(path|dir|name|stem)\}/g;

/** `template` with each placeholder replaced by the part it names. */
export function expandTemplate(template: string, parts: PathParts): string {
  return template.replace(PLACEHOLDER, (_, part: keyof PathParts) => parts[part]);
}

/** Whether a template names the matched path at all (an --also without one is shared by every job). */
export function hasPlaceholder(template: string): boolean {
  return new RegExp(PLACEHOLDER.source).test(template);
}

/** An expanded path with empty and `.` segments dropped (`./a//b` → `a/b`); `..` is left for the path rules. */
export function normalisePath(path: string): string {
  return path
    .split('/')
    .filter((s) => s !== '' && s !== '.')
    .join('/');
}

export interface Expanded {
  path: string;
  instruction: string;
  /** The expanded --also paths, normalised, in template order, without repeats or the matched path. */
  also: string[];
}

/** The work order of every matched path, in the order given. */
export function expandAll(
  paths: readonly string[],
  instruction: string,
  also: readonly string[],
): Expanded[] {
  return paths.map((path) => {
    const parts = pathParts(path);
    const extra: string[] = [];
    for (const t of also) {
      const p = normalisePath(expandTemplate(t, parts));
      if (p !== path && !extra.includes(p)) extra.push(p);
    }
    return { path, instruction: expandTemplate(instruction, parts), also: extra };
  });
}
