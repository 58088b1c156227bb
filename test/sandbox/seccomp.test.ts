// The sandbox's filter, run by a small classic-BPF interpreter (the instructions the filter uses: load a
// word of seccomp_data, jump if equal, return): every keyring and io_uring call of every listed ABI
// answers EPERM, and the calls beside them, and every call of an ABI not listed, are allowed.
import { endianness } from 'node:os';
import { describe, expect, it } from 'vitest';
import { REFUSED_SYSCALLS, sandboxFilter, sandboxFilterCovers } from '../../src/sandbox/seccomp.js';

const ALLOW = 0x7fff0000;
const EPERM = 0x00050001;

/** What the kernel would answer for a call `nr` of ABI `arch` (seccomp_data: nr at 0, arch at 4). */
function run(filter: Buffer, arch: number, nr: number): number {
  const le = endianness() === 'LE';
  const data = [nr >>> 0, arch >>> 0];
  let acc = 0;
  for (let pc = 0; pc < filter.length / 8; pc++) {
    const at = pc * 8;
    const code = le ? filter.readUInt16LE(at) : filter.readUInt16BE(at);
    const jt = filter.readUInt8(at + 2);
    const jf = filter.readUInt8(at + 3);
    const k = le ? filter.readUInt32LE(at + 4) : filter.readUInt32BE(at + 4);
    if (code === 0x20) acc = data[k / 4]!;
    else if (code === 0x15) pc += acc === k ? jt : jf;
    else if (code === 0x06) return k;
    else throw new Error(`instruction ${code.toString(16)} at ${pc}`);
  }
  throw new Error('ran off the end of the filter');
}

describe('sandboxFilter', () => {
  const filter = sandboxFilter();

  it('refuses add_key, request_key, keyctl and the io_uring calls with EPERM in every listed ABI', () => {
    for (const [arch, numbers] of REFUSED_SYSCALLS)
      for (const nr of numbers) expect(run(filter, arch, nr), `${arch.toString(16)}:${nr}`).toBe(EPERM);
  });

  it('allows every other call, and every call of an ABI it does not list', () => {
    for (const [arch, numbers] of REFUSED_SYSCALLS) {
      for (const nr of [0, 1, 59, Math.min(...numbers) - 1, Math.max(...numbers) + 1])
        expect(run(filter, arch, nr), `${arch.toString(16)}:${nr}`).toBe(ALLOW);
    }
    // a number is a keyring call only in its own ABI: x86_64's keyctl (250) is another call on i386
    expect(run(filter, 0x40000003, 250)).toBe(ALLOW);
    expect(run(filter, 0x12345678, 250)).toBe(ALLOW);
  });

  it('holds the x86_64 and x32 numbers from the kernel headers', () => {
    // asm/unistd_64.h and unistd_x32.h: add_key 248, request_key 249, keyctl 250, io_uring_setup 425,
    // io_uring_enter 426, io_uring_register 427; x32 sets bit 30
    expect(REFUSED_SYSCALLS.get(0xc000003e)).toEqual([
      248, 249, 250, 425, 426, 427, 0x400000f8, 0x400000f9, 0x400000fa, 0x400001a9, 0x400001aa, 0x400001ab,
    ]);
  });

  it('refuses the io_uring calls in every listed ABI: the same numbers everywhere', () => {
    for (const [arch] of REFUSED_SYSCALLS)
      for (const nr of [425, 426, 427])
        expect(run(filter, arch, nr), `${arch.toString(16)}:${nr}`).toBe(EPERM);
    // the calls numbered beside them are not: 424 pidfd_send_signal, 428 open_tree
    expect(run(filter, 0xc000003e, 424)).toBe(ALLOW);
    expect(run(filter, 0xc000003e, 428)).toBe(ALLOW);
  });

  it("covers this machine's architecture, and says so for one it does not know", () => {
    expect(sandboxFilterCovers()).toBe(true);
    expect(sandboxFilterCovers('arm64')).toBe(true);
    expect(sandboxFilterCovers('loong64')).toBe(false);
  });
});
