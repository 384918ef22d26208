/*
 * vp/iwarp: RDMAP wire formats (RFC 5040): the control byte, opcodes,
 * the Read Request and Terminate headers, and the RDMAP Terminate codes.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef IW_RDMAP_H
#define IW_RDMAP_H

#include <stdbool.h>
#include <stdint.h>

enum iw_rdmap_ctrl {
  IW_RDMAP_RV_MASK = 0xc0,
  IW_RDMAP_VERSION = 0x40, /* RFC 5040 4.1: RV = 01 */
  IW_RDMAP_RSVD = 0x30,
  IW_RDMAP_OP_MASK = 0x0f,
};

/* RFC 5040 4.2 (IANA "RDMAP Message Operation Codes"). */
typedef enum {
  IW_OP_WRITE = 0x0,
  IW_OP_READ_REQ = 0x1,
  IW_OP_READ_RESP = 0x2,
  IW_OP_SEND = 0x3,
  IW_OP_SEND_INV = 0x4,
  IW_OP_SEND_SE = 0x5,
  IW_OP_SEND_SE_INV = 0x6,
  IW_OP_TERMINATE = 0x7,
  IW_OP_IMM = 0x8,         /* RFC 7306, when the connection negotiated it */
  IW_OP_IMM_SE = 0x9,
  IW_OP_ATOMIC_REQ = 0xa,
  IW_OP_ATOMIC_RESP = 0xb,
  IW_OP_COUNT = 0x10,
} iw_opcode_t;

/* RFC 5040 4.4: RDMA Read Request header, after the untagged DDP header. */
typedef struct __attribute__((packed)) iw_rdmap_readreq {
  uint32_t sink_stag_be;
  uint64_t sink_to_be;
  uint32_t size_be;
  uint32_t src_stag_be;
  uint64_t src_to_be;
} iw_rdmap_readreq_t;

_Static_assert(sizeof(iw_rdmap_readreq_t) == 28, "RDMA Read Request header");

/* RFC 7306: Atomic Request header, after the untagged DDP header (QN 1).
 * The masks make the masked forms: an Add Mask bit set ends a field of
 * the Fetch and Add (no carry out of it); Compare and Swap compares the
 * bits of the Compare Mask and swaps those of the Swap Mask.  This RNIC
 * sends the plain forms: Add Mask 0, Swap Mask all ones, and the Compare
 * Mask all ones (a Fetch and Add's too, as RFC 7306 5.2.1 asks of an unused
 * one). */
typedef struct __attribute__((packed)) iw_rdmap_atomic_req {
  uint32_t opcode_be;       /* Reserved(28) | Atomic Operation(4) */
  uint32_t req_id_be;       /* names the request in its response */
  uint32_t stag_be;
  uint64_t to_be;
  uint64_t add_swap_be;     /* Fetch and Add: the addend; Compare and Swap: the swap value */
  uint64_t add_swap_mask_be;
  uint64_t compare_be;
  uint64_t compare_mask_be;
} iw_rdmap_atomic_req_t;

_Static_assert(sizeof(iw_rdmap_atomic_req_t) == 52, "RFC 7306 Atomic Request header");

/* RFC 7306 Atomic Operation codes (IANA). */
enum iw_atomic_op {
  IW_ATOMIC_FETCH_ADD = 0x0,
  IW_ATOMIC_CMP_SWAP = 0x2,
};

/* RFC 7306: Atomic Response header, after the untagged DDP header (QN 3). */
typedef struct __attribute__((packed)) iw_rdmap_atomic_resp {
  uint32_t req_id_be;       /* the request's identifier */
  uint64_t orig_be;         /* the target's value before the operation */
} iw_rdmap_atomic_resp_t;

_Static_assert(sizeof(iw_rdmap_atomic_resp_t) == 12, "RFC 7306 Atomic Response header");

/* RFC 7306 6.2: the Immediate Data "header", after the untagged DDP header
 * (QN 0): 8 bytes of data and nothing else; it consumes one receive. */
#define IW_RDMAP_IMM_BYTES 8

/* RFC 5040 4.8: Terminate control: Layer(4) EType(4) Code(8) M D R Rsvd(13). */
typedef struct __attribute__((packed)) iw_rdmap_term {
  uint8_t layer_etype;
  uint8_t code;
  uint8_t hdrct;     /* M 0x80, D 0x40, R 0x20 */
  uint8_t rsvd;
} iw_rdmap_term_t;

enum iw_term_hdrct {
  IW_TERM_M = 0x80, /* DDP segment length valid */
  IW_TERM_D = 0x40, /* DDP header copied */
  IW_TERM_R = 0x20, /* RDMAP header copied */
};

enum iw_term_layer {
  IW_LAYER_RDMAP = 0,
  IW_LAYER_DDP = 1,
  IW_LAYER_LLP = 2,
};

enum iw_rdmap_etype {
  IW_RDMAP_ET_CATASTROPHIC = 0,
  IW_RDMAP_ET_REMOTE_PROT = 1,
  IW_RDMAP_ET_REMOTE_OP = 2,
};
enum iw_rdmap_prot_code {
  IW_RDMAP_P_INVALID_STAG = 0x00,
  IW_RDMAP_P_BASE_BOUNDS = 0x01,
  IW_RDMAP_P_ACCESS = 0x02,
  IW_RDMAP_P_STAG_NOT_ASSOC = 0x03,
  IW_RDMAP_P_TO_WRAP = 0x04,
  IW_RDMAP_P_CANT_INVALIDATE = 0x09,
  IW_RDMAP_P_UNSPECIFIED = 0xff,
};
enum iw_rdmap_op_code {
  IW_RDMAP_O_VERSION = 0x05,
  IW_RDMAP_O_OPCODE = 0x06,
  IW_RDMAP_O_CATA_STREAM = 0x07,
  IW_RDMAP_O_CATA_GLOBAL = 0x08,
  IW_RDMAP_O_CANT_INVALIDATE = 0x09,
  IW_RDMAP_O_UNSPECIFIED = 0xff,
};

/* The code a check gives when it finds nothing to terminate for.  It
 * shares its value with the "unspecified" codes above, which no check
 * that answers with it ever gives. */
enum iw_term_code_none {
  IW_TERM_CODE_NONE = 0xff,
};

/* The protocol rules of one opcode (RFC 5040 4.2, 5041 4): what a segment
 * of it must look like and what it needs at the receiver. */
typedef struct iw_op_rule {
  bool valid;         /* an opcode this RNIC speaks */
  bool tagged;        /* DDP T bit */
  uint8_t qn;         /* untagged: the queue number */
  uint8_t extra_hdr;  /* RDMAP header bytes after the DDP header */
  bool payload;       /* may carry data */
  bool single;        /* must be one segment (L=1, MO=0) */
  const char *name;
  bool rfc7306;       /* only on a connection that negotiated RFC 7306 */
} iw_op_rule_t;

extern const iw_op_rule_t iw_op_rules[IW_OP_COUNT];

#endif
