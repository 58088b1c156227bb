// Acting on a name through a descriptor, never its path again (a name swapped for a link meanwhile is not
// followed): Linux names each open descriptor under /proc/self/fd, and an O_PATH descriptor holds a name
// itself, a directory its owner may not read included. Shared by the tree removal and by what keeps a
// check's setup entry plain.
import { existsSync } from 'node:fs';

/** Where a descriptor can be named; undefined without /proc (callers then go by path). */
export const FD_DIR = existsSync('/proc/self/fd') ? '/proc/self/fd' : undefined;
/** Linux's O_PATH (Node names no constant for it): a descriptor of the name itself, no read needed. */
export const O_PATH = 0o10000000;
/** The owner's bits a directory needs for its entries to be listed and removed. */
export const OWNER_RWX = 0o700;
