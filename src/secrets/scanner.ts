// Scan a file's bytes for credentials as they stream past (mint hashes and scans in one read). Each
// chunk goes through the keyword prefilter; only a chunk where some rule's keyword occurs is decoded
// and given to the rules it woke: genjob's own at once, secretlint's preset (async, loaded on first
// need) at end(). Memory stays bounded: a chunk, a 16 KiB carry of the one before (a credential split
// across chunks is seen whole), and the flagged texts waiting for secretlint, capped. Findings name
// a rule and a line, never the matched text, so reporting a secret cannot leak it.

import { scanKeywords } from './keywords.js';
import { prefilter } from './prefilter.js';
import { BLOCK_BYTES, isBinaryBlock, sniffEncoding, type TextEncoding, utf16Decoder } from './text-sniff.js';

export interface SecretFinding {
  /** 1-based line; absent after a skipped binary block, whose lines are not counted. */
  line?: number;
  rule: string;
}

export interface ScanResult {
  findings: SecretFinding[];
  /** True when every block was binary and nothing was scanned. */
  binary: boolean;
}

export interface SecretScanner {
  /** Feed the next chunk of bytes; the scanner copies what it keeps, so the caller may reuse the buffer. */
  push(chunk: Uint8Array): void;
  /** Flush, run what is waiting for secretlint, and return every finding in line order. */
  end(): Promise<ScanResult>;
}

export interface ScanOptions {
  /** The file's path (secretlint's rules look at its name: *.json, package.json …). */
  path?: string;
  /** The file's size, when known: the last chunk then skips the bookkeeping a next chunk would need. */
  size?: number;
  /** Flagged text to hold for secretlint at most (default MAX_PENDING_CHARS). */
  maxPendingChars?: number;
}

/** Bytes of the previous chunk kept before the next: longer than any credential (a PEM key ~10 KB). */
export const CARRY_BYTES = 16 * 1024;
/** Flagged text waiting for secretlint, at most; past it the file is refused (see end()). */
export const MAX_PENDING_CHARS = 32 * 1024 * 1024;
const MAX_FINDINGS = 1000;
/** The rule named when a file holds more flagged text than MAX_PENDING_CHARS. */
export const TOO_MANY_CANDIDATES = 'too many credential-like strings to check';

interface Pending {
  text: string;
  startLine: number | undefined;
  ruleIds: Set<string>;
}

type EngineModule = typeof import('./preset-engine.js');
let engine: Promise<EngineModule> | undefined;

function countNewlines(b: Uint8Array, from = 0, to = b.length): number {
  let n = 0;
  for (let i = b.indexOf(10, from); i !== -1 && i < to; i = b.indexOf(10, i + 1)) n++;
  return n;
}

/** index → newlines before it in `text`; the newlines are found once, on the first call. */
function newlinesBefore(text: string): (index: number) => number {
  let at: number[] | undefined;
  return (index) => {
    if (at === undefined) {
      at = [];
      for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) at.push(i);
    }
    let lo = 0;
    let hi = at.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (at[mid]! < index) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

export function createSecretScanner(options: ScanOptions = {}): SecretScanner {
  const { automaton, rules, wakes } = prefilter();
  const path = options.path ?? '';
  let encoding: TextEncoding | undefined;
  let decode: ((b: Uint8Array) => string) | undefined;
  let flushDecoder: (() => string) | undefined;
  let seen = 0;
  let state = 0;
  let linesBefore = 0; // newlines before the current chunk
  let linesKnown = true;
  let pastLast = false;
  let anyText = false;
  let carry: Buffer | undefined;
  let carryRules: number[] = [];
  let offset = 0; // of the current chunk in the text
  let lastHit = -1; // where the last keyword ended, in the text
  const findings: SecretFinding[] = [];
  const reported = new Set<string>();
  const pending: Pending[] = [];
  let pendingChars = 0;
  let overflow = false;

  const add = (line: number | undefined, rule: string) => {
    const key = `${line}:${rule}`;
    if (findings.length >= MAX_FINDINGS || reported.has(key)) return;
    reported.add(key);
    findings.push({ ...(line === undefined ? {} : { line }), rule });
  };

  /** Run the woken rules on the decoded carry + chunk. */
  const evaluate = (data: Uint8Array, woken: readonly number[]) => {
    const bytes =
      carry === undefined
        ? Buffer.from(data.buffer, data.byteOffset, data.byteLength)
        : Buffer.concat([carry, data]);
    const text = bytes.toString('utf8');
    const startLine = linesKnown
      ? linesBefore - (carry === undefined ? 0 : countNewlines(carry)) + 1
      : undefined;
    const presetIds = new Set<string>();
    const before = newlinesBefore(text);
    for (const r of woken) {
      const { kind, rule } = rules[r]!;
      if (rule.gate !== undefined && !rule.gate.test(text)) continue;
      if (kind === 'preset') presetIds.add(rule.id);
      else
        for (const at of rule.find(text))
          add(startLine === undefined ? undefined : startLine + before(at), rule.name);
    }
    if (presetIds.size === 0) return;
    if (pendingChars + text.length > (options.maxPendingChars ?? MAX_PENDING_CHARS)) overflow = true;
    else {
      pending.push({ text, startLine, ruleIds: presetIds });
      pendingChars += text.length;
    }
  };

  const scanChunk = (data: Uint8Array, last: boolean) => {
    // more bytes than the size said (the file grew while read): its lines were not counted
    if (pastLast) linesKnown = false;
    const woken: number[] = [...carryRules];
    const onHit = (k: number, end: number) => {
      for (const r of wakes[k]!) if (!woken.includes(r)) woken.push(r);
      lastHit = offset + end;
    };
    let sawBinary = false;
    let endsBinary = false;
    for (let from = 0; from < data.length; from += BLOCK_BYTES) {
      const to = Math.min(from + BLOCK_BYTES, data.length);
      endsBinary = encoding === 'utf8' && isBinaryBlock(data, from, to);
      if (endsBinary) {
        sawBinary = true;
        state = 0;
        continue;
      }
      anyText = true;
      state = scanKeywords(automaton, data, from, to, state, onHit);
    }
    if (woken.length > 0) evaluate(data, woken);
    if (sawBinary) linesKnown = false;
    if (last) {
      pastLast = true;
      return;
    }
    // what the next chunk needs: the rules woken within a carry of the end, the lines, the carry
    offset += data.length;
    carryRules = lastHit >= offset - CARRY_BYTES ? woken : [];
    if (linesKnown) linesBefore += countNewlines(data);
    // nothing of a binary block is scanned, so nothing of it is carried
    if (endsBinary) carry = undefined;
    else {
      const tail = carry === undefined || data.length >= CARRY_BYTES ? data : Buffer.concat([carry, data]);
      carry = Buffer.from(tail.subarray(Math.max(0, tail.length - CARRY_BYTES)));
    }
  };

  return {
    push(chunk) {
      if (chunk.length === 0) return;
      let data = chunk;
      if (encoding === undefined) {
        const sniffed = sniffEncoding(chunk);
        encoding = sniffed.encoding;
        if (encoding !== 'utf8') {
          const d = utf16Decoder(encoding);
          decode = d.write;
          flushDecoder = d.end;
        }
        data = chunk.subarray(sniffed.bom);
      }
      seen += chunk.length;
      if (decode !== undefined) data = Buffer.from(decode(data), 'utf8');
      // a UTF-16 decoder may hold back a byte, so its output is never known to be the last
      scanChunk(data, decode === undefined && options.size !== undefined && seen >= options.size);
    },
    async end() {
      if (flushDecoder !== undefined) {
        const rest = flushDecoder();
        if (rest.length > 0) scanChunk(Buffer.from(rest, 'utf8'), true);
      }
      if (pending.length > 0) {
        engine ??= import('./preset-engine.js');
        const { lintWithPreset } = await engine;
        for (const p of pending.splice(0)) {
          const before = newlinesBefore(p.text);
          for (const f of await lintWithPreset(p.text, path, p.ruleIds))
            add(p.startLine === undefined ? undefined : p.startLine + before(f.index), f.rule);
        }
      }
      if (overflow && findings.length === 0) add(undefined, TOO_MANY_CANDIDATES);
      // by line; on one line the maintained rule set's finding first
      const order = (f: SecretFinding) =>
        (f.line ?? Number.MAX_SAFE_INTEGER / 2) * 2 + (f.rule.startsWith('secretlint ') ? 0 : 1);
      findings.sort((a, b) => order(a) - order(b));
      return { findings, binary: seen > 0 && !anyText };
    },
  };
}

/** Findings in a whole string (the instruction, a small file). */
export async function scanSecretText(text: string, path?: string): Promise<SecretFinding[]> {
  const scanner = createSecretScanner(path === undefined ? {} : { path });
  scanner.push(Buffer.from(text, 'utf8'));
  return (await scanner.end()).findings;
}
