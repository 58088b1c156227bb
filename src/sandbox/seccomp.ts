// The seccomp filter every sandbox starts with (bwrap --seccomp FD): classic BPF that answers EPERM to two
// families of calls and allows everything else.
// - The kernel keyring calls, add_key, request_key and keyctl. The keyring is not namespaced: without this
//   a generator (or a checker) inherits serve's session keyring, which pam_keyinit gives every ssh login and
//   links to the user's keyring, and reads each credential kept there (Kerberos KEYRING: caches, tokens
//   added with keyctl). Docker's default profile refuses the same three calls.
// - io_uring (io_uring_setup, io_uring_enter, io_uring_register): a second way into most of the kernel,
//   beside the system calls, and the source of a large share of its recent privilege escalations; Docker's
//   default profile, ChromeOS and Android refuse it to untrusted code too. A program that asks gets EPERM,
//   what `kernel.io_uring_disabled` answers, and falls back to plain calls (libuv, liburing users do).
// The numbers are per architecture; a process of another ABI on the same kernel (i386 or x32 code on
// x86_64, arm code on aarch64) is matched by its own AUDIT_ARCH, so it cannot reach them either.
import { endianness } from 'node:os';
import type { Writable } from 'node:stream';

/** struct seccomp_data: the syscall number at offset 0, the AUDIT_ARCH_* value at offset 4. */
const NR_OFFSET = 0;
const ARCH_OFFSET = 4;
const BPF_LD_W_ABS = 0x20;
const BPF_JMP_JEQ_K = 0x15;
const BPF_RET_K = 0x06;
const SECCOMP_RET_ALLOW = 0x7fff0000;
const SECCOMP_RET_ERRNO = 0x00050000;
const EPERM = 1;
const X32_SYSCALL_BIT = 0x40000000;

/**
 * io_uring_setup, io_uring_enter and io_uring_register: numbered after the kernel made every
 * architecture's table agree (from 424 on), so the same three numbers in each ABI (x32 with its bit).
 */
const IO_URING = [425, 426, 427];

/**
 * AUDIT_ARCH_* → the numbers of add_key, request_key and keyctl, then of the io_uring calls, in that ABI
 * (the kernel's syscall tables).
 */
export const REFUSED_SYSCALLS: ReadonlyMap<number, readonly number[]> = new Map([
  [
    0xc000003e,
    [248, 249, 250, ...IO_URING, ...[248, 249, 250, ...IO_URING].map((nr) => X32_SYSCALL_BIT + nr)],
  ], // x86_64, x32
  [0x40000003, [286, 287, 288, ...IO_URING]], // i386
  [0xc00000b7, [217, 218, 219, ...IO_URING]], // aarch64
  [0x40000028, [309, 310, 311, ...IO_URING]], // arm
  [0xc00000f3, [217, 218, 219, ...IO_URING]], // riscv64
  [0xc0000015, [269, 270, 271, ...IO_URING]], // ppc64le
  [0x80000016, [278, 279, 280, ...IO_URING]], // s390x
]);

/** process.arch → its AUDIT_ARCH_*: the architecture the sandbox's own programs run as. */
const NATIVE_ARCH: Readonly<Record<string, number>> = {
  x64: 0xc000003e,
  ia32: 0x40000003,
  arm64: 0xc00000b7,
  arm: 0x40000028,
  riscv64: 0xc00000f3,
  ppc64: 0xc0000015,
  s390x: 0x80000016,
};

type Instruction = readonly [code: number, jt: number, jf: number, k: number];

/** Whether this machine's architecture has its calls in the filter. */
export function sandboxFilterCovers(arch: string = process.arch): boolean {
  return NATIVE_ARCH[arch] !== undefined;
}

/** The filter as struct sock_filter[] in this machine's byte order, as bwrap reads it from its fd. */
export function sandboxFilter(): Buffer {
  const program: Instruction[] = [];
  for (const [arch, numbers] of REFUSED_SYSCALLS) {
    // a block per architecture: not this one → jump past the block's number load, compares and two returns
    program.push([BPF_LD_W_ABS, 0, 0, ARCH_OFFSET]);
    program.push([BPF_JMP_JEQ_K, 0, numbers.length + 3, arch]);
    program.push([BPF_LD_W_ABS, 0, 0, NR_OFFSET]);
    // the i-th compare jumps over the compares after it and the allow, onto the refusal
    for (const [i, nr] of numbers.entries()) program.push([BPF_JMP_JEQ_K, numbers.length - i, 0, nr]);
    program.push([BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW]);
    program.push([BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM]);
  }
  program.push([BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW]);
  const le = endianness() === 'LE';
  const out = Buffer.alloc(program.length * 8);
  program.forEach(([code, jt, jf, k], i) => {
    const at = i * 8;
    if (le) out.writeUInt16LE(code, at);
    else out.writeUInt16BE(code, at);
    out.writeUInt8(jt, at + 2);
    out.writeUInt8(jf, at + 3);
    if (le) out.writeUInt32LE(k >>> 0, at + 4);
    else out.writeUInt32BE(k >>> 0, at + 4);
  });
  return out;
}

/** The fd bwrap reads the filter from (`--seccomp 3`): the child's stdio[3], a pipe. */
export const FILTER_FD = 3;

/** Hand the filter to a started bwrap through its stdio[3] pipe, which then ends (bwrap reads to EOF). */
export function sendFilter(stdio: readonly unknown[], filter: Buffer): void {
  const pipe = stdio[FILTER_FD] as Writable | null | undefined;
  pipe?.on('error', () => {}); // bwrap gone before it read the filter: that run fails on its own
  pipe?.end(filter);
}
