// What every step of the batch flow works with: the store, this worker, the endpoint settings (read
// from the worker's own environment and config file, as for a local `serve`), and how receipts are
// encoded (signed with GENJOB_SIGN_KEY when it is set, like a local serve's).
import type { Receipt } from '../core/receipt.js';
import type { OpenAiConfig } from '../remote/generators/openai-config.js';
import type { Worker } from '../store/attempts.js';
import type { Store } from '../store/store.js';

export interface BatchContext {
  store: Store;
  worker: Worker;
  config: OpenAiConfig;
  leaseTtlS: number;
  maxAttempts: number;
  /** The time limit of one attempt's reading and diffing of an answer (work --timeout). */
  timeoutMs: number;
  encodeReceipt: (receipt: Receipt) => Buffer;
  /** The user's secret: seals each batch intent, and only a sealed one is uploaded (null: none can be kept). */
  userSecret: Buffer | null;
}
