// The seam between the worker and wherever `genjob serve` runs. A launcher only starts a serve
// process and hands back its stdio; the protocol on top (serve-client.ts) is the same for a
// local child and for ssh, so mint, verify and apply never know which one was used.
import type { Readable, Writable } from 'node:stream';

export interface ServeProcess {
  stdin: Writable;
  stdout: Readable;
  stderr: Readable;
  /** Kill the whole process (group); used on timeouts and when a host lies. */
  kill(): void;
  /** Resolves when the process has exited; never rejects. */
  exited: Promise<{ exitCode: number | null; signal: string | null }>;
}

export interface ServeLauncher {
  /** Where jobs go, for progress lines and the journal: "local" or "user@host:port". */
  readonly destination: string;
  /** Start `genjob serve --session <args>` at the destination. */
  start(args: readonly string[]): ServeProcess;
  /** Facts journalled with every shipment (e.g. the host key fingerprint ssh verified). */
  shipmentFacts(): Promise<Record<string, unknown>>;
  /**
   * The account an ssh destination resolves to through ssh's configuration (`user@hostname:port`):
   * two pool entries with one account would share one control master. Absent for other launchers.
   */
  account?(): Promise<string>;
  /** Release shared resources (e.g. an ssh control master). */
  close(): Promise<void>;
}
