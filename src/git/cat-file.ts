// Read many objects with one `git cat-file --batch` (or --batch-check for types and sizes only): one
// process for any number of objects. Output is parsed by the sizes git states, never by searching for
// newlines, so object content cannot be confused with the framing.
import { git } from './run-git.js';

export interface GitObject {
  spec: string;
  oid: string;
  type: string;
  size: number;
  /** Undefined with --batch-check. */
  content?: Buffer;
}

/** Each spec's object, or null when git says it is missing. */
export async function catFile(
  root: string,
  specs: readonly string[],
  opts: { contents: boolean; maxOutput?: number },
): Promise<Array<GitObject | null>> {
  if (specs.length === 0) return [];
  const r = await git(root, ['cat-file', opts.contents ? '--batch' : '--batch-check'], {
    input: batchInput(specs),
    maxOutput: opts.maxOutput,
  });
  return parseBatch(r.stdout, specs, opts.contents).objects;
}

/** cat-file --batch's stdin for `specs`: one a line (a spec holding a newline is refused). */
export function batchInput(specs: readonly string[]): string {
  for (const s of specs)
    if (/[\n]/.test(s)) throw new TypeError(`object name with a newline: ${JSON.stringify(s)}`);
  return `${specs.join('\n')}\n`;
}

/**
 * Parse what `cat-file --batch` (`contents`) or `--batch-check` printed for `specs`, from offset `from`
 * of `out` (its output may follow another command's in one stream: run-git.ts gitSteps); returns each
 * spec's object (null when missing) and the offset just past the last.
 */
export function parseBatch(
  out: Buffer,
  specs: readonly string[],
  contents: boolean,
  from = 0,
): { objects: Array<GitObject | null>; end: number } {
  const objects: Array<GitObject | null> = [];
  let at = from;
  for (const spec of specs) {
    const eol = out.indexOf(0x0a, at);
    if (eol < 0) throw new Error(`git cat-file: output ended early at ${JSON.stringify(spec)}`);
    const header = out.subarray(at, eol).toString('utf8');
    at = eol + 1;
    if (header.endsWith(' missing') || header.endsWith(' ambiguous')) {
      objects.push(null);
      continue;
    }
    const m = /^([0-9a-f]+) (\S+) (\d+)$/.exec(header);
    if (!m) throw new Error(`git cat-file: unexpected header ${JSON.stringify(header)}`);
    const size = Number(m[3]);
    const obj: GitObject = { spec, oid: m[1]!, type: m[2]!, size };
    if (contents) {
      if (at + size + 1 > out.length)
        throw new Error(`git cat-file: output ended early in ${JSON.stringify(spec)}`);
      obj.content = out.subarray(at, at + size);
      at += size + 1;
    }
    objects.push(obj);
  }
  return { objects, end: at };
}

export interface TreeEntry {
  mode: string;
  name: string;
  oid: string;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Parse a raw tree object (`<mode> <name>\0<binary oid>` repeated); `oidBytes` is 20 (sha1) or 32 (sha256). */
export function parseTree(content: Buffer, oidBytes: number): TreeEntry[] {
  const entries: TreeEntry[] = [];
  let at = 0;
  while (at < content.length) {
    const sp = content.indexOf(0x20, at);
    const nul = content.indexOf(0x00, sp + 1);
    if (sp < 0 || nul < 0 || nul + 1 + oidBytes > content.length) throw new Error('malformed tree object');
    // a name that is not UTF-8 throws here (TextDecoder fatal): it could never be a contract path
    entries.push({
      mode: content.subarray(at, sp).toString('latin1'),
      name: utf8.decode(content.subarray(sp + 1, nul)),
      oid: content.subarray(nul + 1, nul + 1 + oidBytes).toString('hex'),
    });
    at = nul + 1 + oidBytes;
  }
  return entries;
}
