/*
 * vp/iwarp fuzz target: the memory a fuzzed peer can name.  gen_corpus.py
 * writes seeds against the same numbers (keep them in step).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef IW_FUZZ_H
#define IW_FUZZ_H

/* Read-write region (local and remote), 64 KiB at tagged offset 0x10000. */
#define IW_FUZZ_RW_STAG 0x00000200u
#define IW_FUZZ_RW_IOVA 0x10000u
#define IW_FUZZ_RW_LEN 65536u
/* Remote-read-only region, mapped PROT_READ: any placement into it faults. */
#define IW_FUZZ_RO_STAG 0x00000300u
#define IW_FUZZ_RO_IOVA 0x1000u
#define IW_FUZZ_RO_LEN 8192u

/* Byte 0 of an input: mode (bits 0-2: 0-5, 6 and 7 are 1 and 2) and options. */
enum {
  IW_FUZZ_CRC = 0x08,
  IW_FUZZ_READ = 0x10,
  IW_FUZZ_RECVS = 0x20,
  IW_FUZZ_NO_FENCE = 0x40,
  /* 0x80: mode 1 waits for a Read RTR instead of a Write RTR */
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
