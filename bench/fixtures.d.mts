// Types for bench/fixtures.mjs, for the tests that build received jobs on disk the same way.

export function sha256(bytes: Uint8Array | string): string;
export function canonical(v: unknown): string;
export interface MadeJob {
  job: { key: string; instruction: string; inputs: Array<{ path: string; sha256: string | null }> };
  key: string;
  digest: string;
  bytes: Buffer;
}
export function makeJob(instruction: string, inputs: Array<{ path: string; sha256: string | null }>): MadeJob;
export function receivedJob(
  root: string,
  made: MadeJob,
  outputs: Array<{ path: string; sha256: string; bytes: number }>,
  writeOut: (file: string, o: { path: string; sha256: string; bytes: number }) => void,
): void;
export function textBytes(bytes: number): Buffer;
