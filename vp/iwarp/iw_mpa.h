/*
 * vp/iwarp: MPA wire formats (RFC 5044, with the RFC 6581 enhanced
 * connection setup), typed and big-endian, and the CRC32c of FPDUs.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef IW_MPA_H
#define IW_MPA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <endian.h>
#include <string.h>

/* RFC 5044 7.1.1: the 16-byte keys of the request and reply frames. */
#define IW_MPA_KEY_REQ "MPA ID Req Frame"
#define IW_MPA_KEY_REP "MPA ID Rep Frame"
#define IW_MPA_KEY_LEN 16

/* Byte 16 of a request/reply frame. */
enum iw_mpa_flags {
  IW_MPA_FLAG_MARKERS = 0x80,  /* M: the sender wants markers */
  IW_MPA_FLAG_CRC = 0x40,      /* C: the sender wants CRC32c */
  IW_MPA_FLAG_REJECT = 0x20,   /* R: reply only, the connection is refused */
  IW_MPA_FLAG_ENHANCED = 0x10, /* RFC 6581: the control word leads the private data */
  /* Not in any RFC: a Res bit this RNIC sets when it offers the RFC 7306
   * extensions (atomics), which have no negotiation of their own.  A peer
   * that does not know it ignores it (RFC 5044 7.1.1: Res is ignored on
   * receipt), so the reply comes back without it and the connection does
   * without.  siw uses 0x08 the same way (MPA_RR_FLAG_GSO_EXP). */
  IW_MPA_FLAG_RFC7306 = 0x04,
};

/* RFC 5044: at most 512 bytes of private data in a request or reply. */
#define IW_MPA_PDATA_MAX 512

/* RFC 5044 7.1.1 request/reply header; private data follows. */
typedef struct __attribute__((packed)) iw_mpa_rr {
  char key[IW_MPA_KEY_LEN];
  uint8_t flags;
  uint8_t rev;
  uint16_t pd_len_be;
} iw_mpa_rr_t;

_Static_assert(sizeof(iw_mpa_rr_t) == 20, "MPA request/reply header is 20 bytes");

/* RFC 6581 control word: two big-endian halves, IRD then ORD. */
typedef struct __attribute__((packed)) iw_mpa_v2 {
  uint16_t ird_be;
  uint16_t ord_be;
} iw_mpa_v2_t;

enum iw_mpa_v2_bits {
  IW_MPA_V2_PEER2PEER = 0x8000, /* IRD half, A: peer-to-peer mode */
  IW_MPA_V2_RTR_SEND = 0x4000,  /* IRD half, B: zero-length Send RTR */
  IW_MPA_V2_RTR_WRITE = 0x8000, /* ORD half, C: zero-length RDMA Write RTR */
  IW_MPA_V2_RTR_READ = 0x4000,  /* ORD half, D: zero-length RDMA Read RTR */
  IW_MPA_V2_VALUE = 0x3fff,     /* IRD or ORD value; 0x3fff is "no value" */
};

/* Which ready-to-receive message the initiator sends (RFC 6581). */
typedef enum {
  IW_RTR_NONE = 0,
  IW_RTR_WRITE,
  IW_RTR_READ,
} iw_rtr_t;

/* A request or reply as parsed (or to be built). */
typedef struct iw_mpa_msg {
  bool reply;
  bool markers, crc, reject;
  uint8_t rev;
  bool enhanced;               /* RFC 6581 control word present */
  bool rfc7306;                /* IW_MPA_FLAG_RFC7306: RFC 7306 atomics offered */
  bool p2p;                    /* A */
  bool rtr_write, rtr_read, rtr_send; /* C, D, B */
  uint32_t ird, ord;           /* 0x3fff: no value */
  uint32_t pdata_len;          /* ULP private data (control word excluded) */
  const uint8_t *pdata;
} iw_mpa_msg_t;

/* Errors of MPA frame parsing (they become LLP/MPA Terminate codes or a
 * dropped connection during setup). */
typedef enum {
  IW_MPA_OK = 0,
  IW_MPA_EKEY,      /* wrong key */
  IW_MPA_EREV,      /* revision we do not speak */
  IW_MPA_ELEN,      /* private data length out of range */
  IW_MPA_ECTRL,     /* RFC 6581 control word missing */
} iw_mpa_err_t;

/* RFC 5044 / RFC 6581 Terminate codes of Layer 2 (LLP), EType 0 (MPA). */
typedef enum {
  IW_TERM_MPA_CLOSED = 0x01,
  IW_TERM_MPA_CRC = 0x02,
  IW_TERM_MPA_MARKER = 0x03,
  IW_TERM_MPA_REQ_REP = 0x04,
  IW_TERM_MPA_LOCAL_CATA = 0x05,
  IW_TERM_MPA_NO_IRD = 0x06,
  IW_TERM_MPA_NO_RTR = 0x07,
} iw_term_mpa_code_t;

/* FPDU: ULPDU_Length(2) | ULPDU | PAD(0-3) | CRC(4) (RFC 5044 4.1). */
#define IW_FPDU_LEN_BYTES 2
#define IW_FPDU_CRC_BYTES 4
static inline uint32_t iw_fpdu_pad(uint32_t ulpdu_len)
{
  return (4u - ((IW_FPDU_LEN_BYTES + ulpdu_len) & 3u)) & 3u;
}
/* The whole FPDU that a ULPDU_Length of @ulpdu_len announces: length field,
 * ULPDU, pad and CRC (RFC 5044 4.1; the CRC field is there, zero, when CRC
 * is not in use). */
static inline uint32_t iw_fpdu_len(uint32_t ulpdu_len)
{
  return IW_FPDU_LEN_BYTES + ulpdu_len + iw_fpdu_pad(ulpdu_len) + IW_FPDU_CRC_BYTES;
}

/* RFC 5044 4.1, as every peer implements it (siw's put_unaligned_le32(),
 * tshark's check): the CRC field holds the CRC32c least significant byte
 * first.  The one place that says so, for the sender and the receiver: the
 * field's 4 bytes are iw_crc_wire(crc) as it lies in memory. */
static inline uint32_t iw_crc_wire(uint32_t crc)
{
  return htole32(crc);
}
static inline void iw_crc_put(uint8_t *field, uint32_t crc)
{
  uint32_t v = iw_crc_wire(crc);
  memcpy(field, &v, sizeof(v));
}
static inline bool iw_crc_matches(const uint8_t *field, uint32_t crc)
{
  uint32_t v = iw_crc_wire(crc);
  return memcmp(field, &v, sizeof(v)) == 0;
}
/* The CRC a received field holds (what iw_crc_put() wrote at the sender). */
static inline uint32_t iw_crc_get(const uint8_t *field)
{
  uint32_t v;
  memcpy(&v, field, sizeof(v));
  return iw_crc_wire(v);
}

/* Build a frame into @out (room for 20 + 512 bytes); returns its length. */
size_t iw_mpa_build(const iw_mpa_msg_t *m, uint8_t *out);
/* Parse a complete frame header (20 bytes): private data length. */
iw_mpa_err_t iw_mpa_parse_header(const uint8_t *hdr, bool reply, uint32_t *pd_len);
/* Parse a complete frame (header + private data) into @m (pdata points into @buf). */
iw_mpa_err_t iw_mpa_parse(const uint8_t *buf, size_t len, bool reply, iw_mpa_msg_t *m);

/* CRC32c (Castagnoli), as MPA uses it: iw_crc32c(0, ...) starts a CRC,
 * feeding the result back continues it. */
uint32_t iw_crc32c(uint32_t crc, const void *buf, size_t len);
void iw_crc_init(void);
/* The implementation iw_crc_init chose: "fold", "streams" or "tables". */
const char *iw_crc_impl_name(void);

#endif
