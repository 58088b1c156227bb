// The filesystem calls the store makes, as one injectable object. Production passes node:fs;
// fault-injection tests pass a wrapper that fails or "crashes" after a chosen call.
import * as fs from 'node:fs';

export type FsPort = Pick<
  typeof fs,
  | 'openSync'
  | 'writeSync'
  | 'fsyncSync'
  | 'closeSync'
  | 'linkSync'
  | 'unlinkSync'
  | 'renameSync'
  | 'mkdirSync'
  | 'readFileSync'
  | 'readdirSync'
  | 'lstatSync'
  | 'statSync'
  | 'rmSync'
  | 'utimesSync'
  | 'readSync'
  | 'fstatSync'
  | 'fchmodSync'
>;

export const nodeFs: FsPort = fs;
