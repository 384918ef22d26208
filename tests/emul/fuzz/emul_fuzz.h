/*
 * The input format of the vp/emul fuzz target (emul_fuzz.c, which
 * describes it), shared with the recorder of its seeds
 * (emul_fuzz_record.c).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef EMUL_FUZZ_H
#define EMUL_FUZZ_H

#include <stdint.h>

/* Byte 0: the set-up. */
#define EMUL_FUZZ_TRUSTED 0x01
#define EMUL_FUZZ_RAW 0x02
#define EMUL_FUZZ_POSTS 0x04
#define EMUL_FUZZ_RECVS 0x08
#define EMUL_FUZZ_UNSEALED 0x10

/* The records: [kind u8][length u32 LE][bytes]. */
enum {
  EMUL_FUZZ_MSG = 0,
  EMUL_FUZZ_FRAME = 1,
  EMUL_FUZZ_ACK = 2,
  EMUL_FUZZ_BELL = 3,
  EMUL_FUZZ_CONSUME = 4,
  EMUL_FUZZ_PAUSE = 5,
};
#define EMUL_FUZZ_AS_IS 0x80  /* a message's magic, a frame's mark, as given */

/* The target's regions, which a frame names by these tokens. */
#define EMUL_FUZZ_RW_LEN 65536
#define EMUL_FUZZ_RO_LEN 4096
#define EMUL_FUZZ_RKEY_RW UINT64_C(0x7e57000000000001)
#define EMUL_FUZZ_RKEY_RO UINT64_C(0x7e57000000000002)
#define EMUL_FUZZ_ADDR_RW UINT64_C(0x7e570001)  /* raddr's top 32 bits */
#define EMUL_FUZZ_ADDR_RO UINT64_C(0x7e570002)

/* The segment's keys and the harness's nonce: fixed, so that an input
 * means the same every run. */
#define EMUL_FUZZ_KEY0 UINT64_C(0x8000000000f00d01)
#define EMUL_FUZZ_KEY1 UINT64_C(0x8000000000f00d02)
#define EMUL_FUZZ_NONCE UINT64_C(0x5eed5eed5eed5eed)

#endif
