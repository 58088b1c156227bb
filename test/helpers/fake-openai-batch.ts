// The batch side of the fake OpenAI-compatible server: files (POST /v1/files multipart, GET
// /v1/files/{id}/content) and batches (POST/GET /v1/batches, GET /v1/batches/{id}). A batch takes
// `pollsToFinish` looks to finish, then ends with `finalStatus`; each request line is answered by
// `answer`. POST /v1/batches can be scripted to fail with a 500 (optionally after creating the batch).
// `submitted` counts, per custom_id, how many created batches carried it: the no-double-spend check.
// A result file download can be scripted to break off, to declare a size past genjob's cap, or to
// come without a length (chunked).

export type LineAnswer =
  /** A 200 line whose body is this chat completion. */
  | { body: object }
  /** A line the provider failed, in the error file, with `response.status_code` and an error body. */
  | { status: number; code: string; message: string }
  /** Not answered: for an expired or cancelled batch, an error line with batch_expired/batch_cancelled. */
  | 'unanswered';

export interface FakeBatchOptions {
  answer: (customId: string, body: Record<string, unknown>) => LineAnswer;
  /** GETs of a batch before it reports its final status (default 2). */
  pollsToFinish?: number;
  finalStatus?: 'completed' | 'expired' | 'cancelled' | 'failed';
  /** One entry consumed per POST /v1/batches: 'ok', '500' (nothing created) or '500-created'. */
  creates?: Array<'ok' | '500' | '500-created'>;
  /** One entry consumed per GET /v1/files/{id}/content (default 'whole'). */
  downloads?: Delivery[];
}

/**
 * How a file's content is sent: whole with its length; 'cut': its full length declared, half of it
 * sent, then the connection reset; 'oversize': a length past genjob's cap declared, a few bytes sent,
 * then the reset; 'chunked': whole, without a length.
 */
export type Delivery = 'whole' | 'cut' | 'oversize' | 'chunked';

interface FakeFile {
  id: string;
  purpose: string;
  content: string;
}

interface FakeBatch {
  id: string;
  status: string;
  input_file_id: string;
  endpoint: string;
  metadata: Record<string, unknown> | null;
  output_file_id: string | null;
  error_file_id: string | null;
  polls: number;
  created_at: number;
}

export interface FakeBatchState {
  files: Map<string, FakeFile>;
  batches: FakeBatch[];
  /** custom_id → number of created batches whose input carried it. */
  submitted: Map<string, number>;
}

export interface Reply {
  status: number;
  body: object | string;
  delivery?: Delivery;
}

export function fakeBatchApi(opts: FakeBatchOptions) {
  const state: FakeBatchState = { files: new Map(), batches: [], submitted: new Map() };
  const creates = [...(opts.creates ?? [])];
  const downloads = [...(opts.downloads ?? [])];
  let n = 0;
  const next = (prefix: string) => `${prefix}-${++n}`;

  const finish = (b: FakeBatch) => {
    b.status = opts.finalStatus ?? 'completed';
    if (b.status === 'failed') return;
    const input = state.files.get(b.input_file_id)!.content;
    const out: string[] = [];
    const errors: string[] = [];
    for (const raw of input.split('\n')) {
      if (raw.trim() === '') continue;
      const line = JSON.parse(raw) as { custom_id: string; body: Record<string, unknown> };
      const a = opts.answer(line.custom_id, line.body);
      const id = next('batch_req');
      if (a === 'unanswered') {
        if (b.status === 'completed') continue;
        const code = b.status === 'expired' ? 'batch_expired' : 'batch_cancelled';
        errors.push(
          JSON.stringify({
            id,
            custom_id: line.custom_id,
            response: null,
            error: { code, message: `This request was not run (${b.status}).` },
          }),
        );
      } else if ('body' in a) {
        out.push(
          JSON.stringify({
            id,
            custom_id: line.custom_id,
            response: { status_code: 200, request_id: id, body: a.body },
            error: null,
          }),
        );
      } else {
        errors.push(
          JSON.stringify({
            id,
            custom_id: line.custom_id,
            response: {
              status_code: a.status,
              request_id: id,
              body: { error: { message: a.message, type: 'invalid_request_error', code: a.code } },
            },
            error: null,
          }),
        );
      }
    }
    const file = (lines: string[]) => {
      if (lines.length === 0) return null;
      const f = { id: next('file'), purpose: 'batch_output', content: `${lines.join('\n')}\n` };
      state.files.set(f.id, f);
      return f.id;
    };
    b.output_file_id = file(out);
    b.error_file_id = file(errors);
  };

  const view = (b: FakeBatch) => ({
    id: b.id,
    object: 'batch',
    endpoint: b.endpoint,
    input_file_id: b.input_file_id,
    completion_window: '24h',
    status: b.status,
    output_file_id: b.output_file_id,
    error_file_id: b.error_file_id,
    created_at: b.created_at,
    metadata: b.metadata,
  });

  /** The reply for a batch-API request, or undefined when the path is not one of ours. */
  function handle(method: string, path: string, contentType: string, raw: Buffer): Reply | undefined {
    const url = new URL(path, 'http://x');
    const p = url.pathname;
    if (method === 'POST' && p === '/v1/files') {
      const parts = multipart(raw, contentType);
      const content = parts.get('file');
      if (content === undefined) return { status: 400, body: { error: { message: 'no file part' } } };
      const f = { id: next('file'), purpose: parts.get('purpose') ?? '', content };
      state.files.set(f.id, f);
      return { status: 200, body: { id: f.id, object: 'file', purpose: f.purpose, bytes: content.length } };
    }
    const content = /^\/v1\/files\/([^/]+)\/content$/.exec(p);
    if (method === 'GET' && content) {
      const f = state.files.get(decodeURIComponent(content[1]!));
      return f
        ? { status: 200, body: f.content, delivery: downloads.shift() ?? 'whole' }
        : { status: 404, body: { error: { message: 'no such file' } } };
    }
    if (method === 'POST' && p === '/v1/batches') {
      const req = JSON.parse(raw.toString('utf8')) as {
        input_file_id: string;
        endpoint: string;
        metadata?: Record<string, unknown>;
      };
      const how = creates.shift() ?? 'ok';
      if (how === '500') return { status: 500, body: { error: { message: 'fake: create failed' } } };
      const input = state.files.get(req.input_file_id);
      if (!input) return { status: 400, body: { error: { message: 'unknown input_file_id' } } };
      const b: FakeBatch = {
        id: next('batch'),
        status: 'validating',
        input_file_id: req.input_file_id,
        endpoint: req.endpoint,
        metadata: req.metadata ?? null,
        output_file_id: null,
        error_file_id: null,
        polls: 0,
        created_at: Math.floor(Date.now() / 1000),
      };
      state.batches.push(b);
      for (const line of input.content.split('\n')) {
        if (line.trim() === '') continue;
        const id = (JSON.parse(line) as { custom_id: string }).custom_id;
        state.submitted.set(id, (state.submitted.get(id) ?? 0) + 1);
      }
      if (how === '500-created')
        return { status: 500, body: { error: { message: 'fake: created, then failed' } } };
      return { status: 200, body: view(b) };
    }
    if (method === 'GET' && p === '/v1/batches') {
      const newest = [...state.batches].reverse().map(view);
      return { status: 200, body: { object: 'list', data: newest, has_more: false } };
    }
    const one = /^\/v1\/batches\/([^/]+)$/.exec(p);
    if (method === 'GET' && one) {
      const b = state.batches.find((x) => x.id === decodeURIComponent(one[1]!));
      if (!b) return { status: 404, body: { error: { message: 'no such batch' } } };
      b.polls += 1;
      if (!['completed', 'expired', 'cancelled', 'failed'].includes(b.status)) {
        if (b.polls >= (opts.pollsToFinish ?? 2)) finish(b);
        else b.status = 'in_progress';
      }
      return { status: 200, body: view(b) };
    }
    return undefined;
  }

  return { state, handle };
}

/** The text parts of a multipart/form-data body by field name. */
function multipart(raw: Buffer, contentType: string): Map<string, string> {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(contentType);
  const parts = new Map<string, string>();
  if (!boundary) return parts;
  const sep = `--${boundary[1] ?? boundary[2]}`;
  for (const part of raw.toString('utf8').split(sep)) {
    const head = part.indexOf('\r\n\r\n');
    if (head < 0) continue;
    const name = /name="([^"]+)"/.exec(part.slice(0, head))?.[1];
    if (name === undefined) continue;
    parts.set(name, part.slice(head + 4).replace(/\r\n$/, ''));
  }
  return parts;
}
