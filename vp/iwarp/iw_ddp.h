/*
 * vp/iwarp: DDP wire formats (RFC 5041): the control field, the tagged and
 * untagged buffer model headers, and the DDP Terminate error codes.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef IW_DDP_H
#define IW_DDP_H

#include <endian.h>
#include <stdint.h>

enum iw_ddp_ctrl {
  IW_DDP_TAGGED = 0x80, /* T */
  IW_DDP_LAST = 0x40,   /* L */
  IW_DDP_RSVD = 0x3c,
  IW_DDP_DV_MASK = 0x03,
  IW_DDP_VERSION = 0x01, /* RFC 5041 4.1: DV = 01 */
};

/* RFC 5041 4.2: tagged buffer model header (14 bytes). */
typedef struct __attribute__((packed)) iw_ddp_tagged {
  uint8_t ctrl;      /* T L Rsvd DV */
  uint8_t rdmap;     /* RsvdULP[0:7]: the RDMAP control byte */
  uint32_t stag_be;
  uint64_t to_be;
} iw_ddp_tagged_t;

/* RFC 5041 4.3: untagged buffer model header (18 bytes). */
typedef struct __attribute__((packed)) iw_ddp_untagged {
  uint8_t ctrl;
  uint8_t rdmap;
  uint32_t inv_stag_be; /* RsvdULP[8:39]: RDMAP's Invalidate STag */
  uint32_t qn_be;
  uint32_t msn_be;
  uint32_t mo_be;
} iw_ddp_untagged_t;

_Static_assert(sizeof(iw_ddp_tagged_t) == 14, "DDP tagged header");
_Static_assert(sizeof(iw_ddp_untagged_t) == 18, "DDP untagged header");

/* Untagged queue numbers (IANA "RDMAP DDP Untagged Queue Numbers"). */
enum iw_ddp_qn {
  IW_QN_SEND = 0,
  IW_QN_READ_REQ = 1,
  IW_QN_TERMINATE = 2,
  IW_QN_ATOMIC_RESP = 3, /* RFC 7306: Atomic Responses (Atomic Requests share QN 1) */
  IW_QN_COUNT = 4,
};

/* Terminate Layer 1 (DDP) error types and codes (RFC 5041 7.2). */
enum iw_ddp_etype {
  IW_DDP_ET_CATASTROPHIC = 0,
  IW_DDP_ET_TAGGED = 1,
  IW_DDP_ET_UNTAGGED = 2,
};
enum iw_ddp_tagged_code {
  IW_DDP_T_INVALID_STAG = 0x00,
  IW_DDP_T_BASE_BOUNDS = 0x01,
  IW_DDP_T_STAG_NOT_ASSOC = 0x02,
  IW_DDP_T_TO_WRAP = 0x03,
  IW_DDP_T_VERSION = 0x04,
};
enum iw_ddp_untagged_code {
  IW_DDP_U_INVALID_QN = 0x01,
  IW_DDP_U_NO_BUFFER = 0x02,
  IW_DDP_U_MSN_RANGE = 0x03,
  IW_DDP_U_INVALID_MO = 0x04,
  IW_DDP_U_TOO_LONG = 0x05,
  IW_DDP_U_VERSION = 0x06,
};

static inline uint32_t iw_be32(uint32_t v) { return be32toh(v); }
static inline uint64_t iw_be64(uint64_t v) { return be64toh(v); }

#endif
