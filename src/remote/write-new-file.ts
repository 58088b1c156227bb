// A new file of the host's cache (the secret's temp, an entry's MAC, a generation's started record):
// created exclusively (0600), written whole, fsynced. Every failure is EGJ_IO naming the file, since a
// file handle's write, sync and close errors carry no path of their own.
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { ioErrorAt } from '../core/errors.js';

export async function writeNewFile(path: string, text: string): Promise<void> {
  try {
    const fh = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    try {
      await fh.writeFile(text);
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch (err) {
    throw ioErrorAt(path, err);
  }
}
