// The model judge (`"judge": "builtin:openai"`): one round asks the endpoint builtin:openai uses on this
// machine (GENJOB_OPENAI_BASE_URL, its key and config file; the checker names the model) for `samples`
// independent judgements, one request each, sample index inside each request. Each answer is a vote:
// pass, fail, invalid (not the fixed JSON schema) or error (no answer: refused, broke off, HTTP error).
// The round is decided by quorum (verdict.ts). Only a refused connection or an HTTP 429 — nothing was
// generated — is tried again. Every token the endpoint reports is counted into `spent`.

import { setTimeout as sleep } from 'node:timers/promises';
import { wellFormed } from '../core/canonical-json.js';
import { addUsage, excerpt } from '../remote/generators/openai-answer.js';
import { readOpenAiConfig } from '../remote/generators/openai-config.js';
import { post, retryAfterMs } from '../remote/generators/openai-http.js';
import type { JudgeChecker } from './checker.js';
import { JUDGE_RESPONSE_FORMAT, type JudgeData, judgeMessages, parseJudgement } from './judge-prompt.js';
import type { SampleRecord, Usage } from './record.js';
import { type Outcome, quorumOutcome } from './verdict.js';

const MAX_BACKOFF_MS = 30_000;
const MAX_MODEL_CHARS = 200;

export interface JudgeRound {
  samples: SampleRecord[];
  spent: Usage;
  outcome: Outcome;
  /** Why the round is an error, when no sample could even be asked. */
  why: string | null;
}

export interface JudgeAsk {
  checker: JudgeChecker;
  data: Omit<JudgeData, 'sample' | 'samples'>;
  env: NodeJS.ProcessEnv;
  /** The index of this round's first sample (indexes go on across rounds of one record). */
  firstIndex: number;
}

type Vote = Omit<SampleRecord, 'index'>;

/**
 * A chat completion's answer read as a vote, its text well-formed: a single lone surrogate from the
 * endpoint made the record unwritable, and the check an internal error with its spend lost.
 */
function voteOf(text: string): Vote {
  const v = readVote(text);
  return { ...v, reason: wellFormed(v.reason), model: v.model === null ? null : wellFormed(v.model) };
}

function readVote(text: string): Vote {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return { vote: 'invalid', score: null, reason: `not a chat completion: ${excerpt(text)}`, model: null };
  }
  const d = doc as { model?: unknown; choices?: Array<{ message?: { content?: unknown } }> } | null;
  const model = typeof d?.model === 'string' ? d.model.slice(0, MAX_MODEL_CHARS) : null;
  const content = d?.choices?.[0]?.message?.content;
  if (typeof content !== 'string')
    return { vote: 'invalid', score: null, reason: 'the completion carries no answer text', model };
  const j = parseJudgement(content);
  if (!j.ok) return { vote: 'invalid', score: null, reason: `${j.why}: ${excerpt(content)}`, model };
  return { vote: j.pass ? 'pass' : 'fail', score: j.score, reason: j.reason, model };
}

export async function judgeRound(ask: JudgeAsk): Promise<JudgeRound> {
  const spent: Usage = { prompt_tokens: 0, completion_tokens: 0, requests: 0 };
  const { checker } = ask;
  const loaded = readOpenAiConfig({ ...ask.env, GENJOB_OPENAI_MODEL: checker.model });
  if (!loaded.ok) return { samples: [], spent, outcome: 'error', why: `${checker.judge}: ${loaded.problem}` };
  const config = loaded.config;
  const timeoutMs = Math.min(checker.timeout_s * 1000, config.requestTimeoutMs ?? Number.POSITIVE_INFINITY);
  const target = `${config.endpoint.origin}${config.endpoint.pathname}`;

  const askOne = async (index: number): Promise<Vote> => {
    let structured = config.structured !== 'off';
    let retries = config.maxRetries;
    const messages = judgeMessages({ ...ask.data, sample: index, samples: checker.samples });
    const error = (reason: string): Vote => ({ vote: 'error', score: null, reason, model: null });
    for (let tries = 1; ; tries++) {
      const body = JSON.stringify({
        ...checker.params,
        model: checker.model,
        messages,
        stream: false,
        ...(structured ? { response_format: JUDGE_RESPONSE_FORMAT } : {}),
      });
      const ex = await post(config, body, timeoutMs);
      if (ex.reached) spent.requests += 1;
      const again = async (wait: number | null) => {
        if (retries === 0) return false;
        retries -= 1;
        await sleep(wait ?? Math.min(MAX_BACKOFF_MS, config.retryBaseMs * 2 ** (tries - 1)));
        return true;
      };
      if (ex.kind === 'refused') {
        if (await again(null)) continue;
        return error(`connection refused by ${config.endpoint.host} (${tries} tries)`);
      }
      if (ex.kind !== 'response') return error(ex.reason);
      addUsage(spent, ex.text);
      if (ex.status >= 200 && ex.status < 300) return voteOf(ex.text);
      if (ex.status === 429) {
        if (await again(retryAfterMs(ex.headers['retry-after']))) continue;
        return error(`rate limited (HTTP 429) by ${target}`);
      }
      if (
        (ex.status === 400 || ex.status === 422) &&
        structured &&
        config.structured === 'auto' &&
        /response_format|json_schema/i.test(ex.text)
      ) {
        structured = false; // refused before anything was generated: ask again without structured output
        continue;
      }
      return error(`HTTP ${ex.status} from ${target}: ${excerpt(ex.text)}`);
    }
  };

  const samples: SampleRecord[] = [];
  // one after another: independent requests, and an order the record can state
  for (let i = 0; i < checker.samples; i++) {
    const index = ask.firstIndex + i;
    samples.push({ index, ...(await askOne(index)) });
  }
  const outcome = quorumOutcome(
    samples.map((s) => s.vote),
    checker.quorum,
  );
  return { samples, spent, outcome, why: null };
}
