// The header blocks of one regular file as packTar writes it: mode 0644, uid/gid 0, empty owner names,
// mtime 0, and a pax header first when the name or size needs one. node-tar's Header encodes them; the
// common case (a name under 100 bytes of printable ASCII, a size under 8 GiB: one ustar block, no pax)
// is filled in by hand from a block node-tar made, because Header costs ~50 µs a file and a bundle of
// source code has thousands. A property test holds the two to the same bytes.
// node-tar's header and pax modules alone: its index would also load (and bundle) its pack, unpack, list
// and replace, which genjob never uses (~70 ms of CPU a local `work`, its worker and serve together)
import { Header } from 'tar/header';
import { Pax } from 'tar/pax';

const BLOCK = 512;
const EPOCH = new Date(0);
/** The largest size an 11-digit octal field holds (node-tar's MAXNUM for 12-byte fields). */
const MAX_OCTAL_SIZE = 0o77777777777;
const PLAIN_NAME = /^[\x20-\x7e]{1,99}$/;

function headerBlock(
  path: string,
  size: number,
  type: 'File' | 'ExtendedHeader',
): { block: Buffer; needPax: boolean } {
  const block = Buffer.alloc(BLOCK);
  const h = new Header({ path, mode: 0o644, uid: 0, gid: 0, size, mtime: EPOCH, type, uname: '', gname: '' });
  const needPax = h.encode(block);
  return { block, needPax };
}

/** node-tar's block for an empty name and size 0: every other field as packTar writes it. */
const TEMPLATE = headerBlock('', 0, 'File').block;

/** `n` in octal, as node-tar pads a number field of `width` bytes: zeros, digits, then ' \0' (or '\0' when full). */
function octalField(n: number, width: number): string {
  const digits = n.toString(8);
  return digits.length === width - 1 ? `${digits}\0` : `${'0'.repeat(width - digits.length - 2)}${digits} \0`;
}

/** One ustar block for a plain name and size, byte for byte what node-tar's Header writes. */
function plainHeader(name: string, size: number): Buffer {
  const block = Buffer.from(TEMPLATE);
  block.write(name, 0, 'latin1');
  block.write(octalField(size, 12), 124, 'latin1');
  let sum = 8 * 0x20; // the checksum field counts as eight spaces
  for (let i = 0; i < 148; i++) sum += block[i]!;
  for (let i = 156; i < BLOCK; i++) sum += block[i]!;
  block.write(octalField(sum, 8), 148, 'latin1');
  return block;
}

/** Header (plus a pax header first when the name is long or non-ASCII, or the size is over 8 GiB). */
export function entryHeader(name: string, size: number): Buffer {
  return size <= MAX_OCTAL_SIZE && PLAIN_NAME.test(name)
    ? plainHeader(name, size)
    : nodeTarHeader(name, size);
}

/** The same blocks, all from node-tar's Header (exported for the test that holds the two equal). */
export function nodeTarHeader(name: string, size: number): Buffer {
  const main = headerBlock(name, size, 'File');
  if (!main.needPax) return main.block;
  const body = Buffer.from(new Pax({ path: name, size }).encodeBody(), 'utf8');
  const pax = headerBlock('PaxHeader', body.length, 'ExtendedHeader');
  const padded = Buffer.alloc(BLOCK * Math.ceil(body.length / BLOCK));
  body.copy(padded);
  return Buffer.concat([pax.block, padded, main.block]);
}
