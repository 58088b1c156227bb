// Find many keywords in one pass over bytes: an Aho-Corasick automaton compiled to a dense table
// over byte classes, so each byte costs two array loads whatever the number of keywords (a regex
// alternation of the same keywords costs several times more per byte on V8). Matching folds ASCII
// case; a case-sensitive keyword is confirmed against the bytes when they are at hand. A hit only
// says a rule may apply: the rule itself decides.

export interface Keyword {
  text: string;
  /** Match ASCII letters in either case (the rule it guards is case-insensitive there). */
  anyCase?: boolean;
}

/** A necessary condition on the text, cheaper than the rule it guards (a RegExp is one). */
export interface Gate {
  test(text: string): boolean;
}

/**
 * A gate that holds when `text` has a run of `n` characters from `chars`. A regex such as
 * /[0-9a-f]{40}/ restarts at every position, which costs much in code full of short hex-letter words;
 * this looks at every n-th character first and walks back only from a member.
 */
export function runGate(chars: string, n: number): Gate {
  const member = new Uint8Array(128);
  for (const c of chars) member[c.charCodeAt(0)] = 1;
  const is = (text: string, i: number) => {
    const c = text.charCodeAt(i);
    return c < 128 && member[c] === 1;
  };
  return {
    test(text) {
      for (let end = n - 1; end < text.length; ) {
        if (!is(text, end)) {
          end += n;
          continue;
        }
        let start = end;
        while (end - start + 1 < n && start > 0 && is(text, start - 1)) start--;
        if (end - start + 1 >= n) return true;
        end = start - 1 + n; // the run ending at `end` is too short: a long one ends past start - 1 + n
      }
      return false;
    },
  };
}

export interface KeywordAutomaton {
  readonly keywords: readonly Keyword[];
  /** byte → class; bytes that occur in no keyword share class 0. */
  readonly classOf: Uint8Array;
  /** next[state + class] is the next state; states are premultiplied by the class count. */
  readonly next: Uint16Array | Uint32Array;
  /**
   * States where some keyword ends are numbered last: a (premultiplied) state at or above this is one.
   * So the scan tells a hit by comparing the state it already holds, not by a second table load.
   */
  readonly acceptFrom: number;
  /** Keyword indices ending at each state (indexed by state / class count). */
  readonly outputs: ReadonlyArray<readonly number[]>;
  readonly classes: number;
  /** The keywords' bytes, for confirming a case-sensitive hit. */
  readonly bytes: readonly Uint8Array[];
}

const lower = (b: number) => (b >= 0x41 && b <= 0x5a ? b | 0x20 : b);

/** Compile `keywords` (non-empty, ASCII) into an automaton: typed arrays throughout, ~1 ms for ~100 keywords. */
export function compileKeywords(keywords: readonly Keyword[]): KeywordAutomaton {
  const bytes = keywords.map((k) => Uint8Array.from(k.text, (ch) => ch.charCodeAt(0) & 0xff));
  const classOf = new Uint8Array(256);
  let classes = 1;
  let maxStates = 1;
  for (const b of bytes) {
    maxStates += b.length;
    for (const c of b) {
      const l = lower(c);
      if (classOf[l] === 0) classOf[l] = classes++;
    }
  }
  for (let c = 0x41; c <= 0x5a; c++) classOf[c] = classOf[c | 0x20]!;

  // the trie as a dense table (0 = no edge: the root is never a child), then failure links breadth
  // first, filling every missing edge, which makes it a DFA
  const table = new Uint32Array(maxStates * classes);
  const out: number[][] = [[]];
  let states = 1;
  bytes.forEach((b, k) => {
    let s = 0;
    for (const c of b) {
      const at = s * classes + classOf[c]!;
      if (table[at] === 0) {
        table[at] = states++;
        out.push([]);
      }
      s = table[at]!;
    }
    out[s]!.push(k);
  });
  const fail = new Uint32Array(states);
  const queue = new Uint32Array(states);
  let tail = 0;
  for (let c = 0; c < classes; c++) if (table[c] !== 0) queue[tail++] = table[c]!;
  for (let head = 0; head < tail; head++) {
    const s = queue[head]!;
    const f = fail[s]!;
    if (out[f]!.length > 0) out[s]!.push(...out[f]!);
    for (let c = 0; c < classes; c++) {
      const t = table[s * classes + c]!;
      if (t === 0) table[s * classes + c] = table[f * classes + c]!;
      else {
        fail[t] = table[f * classes + c]!;
        queue[tail++] = t;
      }
    }
  }
  // renumber: the root stays 0 (no keyword is empty, so it accepts nothing), accepting states go last
  const id = new Uint32Array(states);
  let quiet = 0;
  for (let s = 0; s < states; s++) if (out[s]!.length === 0) id[s] = quiet++;
  let loud = quiet;
  for (let s = 0; s < states; s++) if (out[s]!.length > 0) id[s] = loud++;
  const size = states * classes;
  const next = size > 0xffff ? new Uint32Array(size) : new Uint16Array(size);
  const outputs: number[][] = new Array(states);
  for (let s = 0; s < states; s++) {
    const to = id[s]! * classes;
    for (let c = 0; c < classes; c++) next[to + c] = id[table[s * classes + c]!]! * classes;
    outputs[id[s]!] = out[s]!;
  }
  return { keywords, classOf, next, acceptFrom: quiet * classes, outputs, classes, bytes };
}

/**
 * Run the automaton over bytes[from, to) starting in `state`; call `hit(keyword, end)` for every
 * keyword occurrence (`end` is the index of its last byte) whose case matches, and return the state
 * to resume from with the next bytes. A case-sensitive keyword that began before `from` is reported
 * unconfirmed (a hit costs only a rule run).
 */
export function scanKeywords(
  a: KeywordAutomaton,
  bytes: Uint8Array,
  from: number,
  to: number,
  state: number,
  hit: (keyword: number, end: number) => void,
): number {
  const { next, classOf, acceptFrom } = a;
  let s = state;
  for (let i = from; i < to; i++) {
    s = next[s + classOf[bytes[i]!]!]!;
    if (s >= acceptFrom) {
      for (const k of a.outputs[s / a.classes]!) if (caseMatches(a, k, bytes, from, i)) hit(k, i);
    }
  }
  return s;
}

function caseMatches(a: KeywordAutomaton, k: number, bytes: Uint8Array, from: number, end: number): boolean {
  if (a.keywords[k]!.anyCase === true) return true;
  const kw = a.bytes[k]!;
  const start = end - kw.length + 1;
  if (start < from) return true;
  for (let j = 0; j < kw.length; j++) if (bytes[start + j] !== kw[j]) return false;
  return true;
}
