/*
 * cert-interop: helpers of the test program (the fixture and the provider
 * verbs come from conformance/rnicpi/cert.h).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef INTEROP_TEST_H
#define INTEROP_TEST_H

#include <sys/socket.h>

#include "cert.h"
#include "interop.h"

/* The capability the interop tests name when they skip: transport iWARP in
 * the record and a listener reachable over TCP at the first address. */
#define INTEROP_CAP_WIRE "iwarp-tcp-wire"

/* CM verbs and an iWARP wire, or a skip that names the missing one. */
gboolean interop_require_wire(cert_t *f);
/* A blocking TCP connection to @ss: the descriptor, or -errno. */
int interop_tcp_connect(const struct sockaddr_storage *ss);

/* How long a raw peer waits for the provider's next bytes. */
#define INTEROP_RAW_WAIT_MS 5000

/* interop_frame.c: the golden MPA Request both golden files send (RFC
 * 5044 7.1.1: C=1, Rev 1, private data "ULP private data"), the Reply's
 * key, and the 13 bytes of the golden Send. */
extern const uint8_t wire_golden_request[36];
extern const uint8_t wire_key_rep[16];
extern const char wire_hello[14];
/* The raw peer's CRC32c (RFC 3720 B.4), checked against
 * the published vectors by wire_crc_known_answers(). */
uint32_t wire_crc32c(const uint8_t *p, size_t n);
void wire_crc_known_answers(void);
/* Big-endian header fields. */
void wire_put32(uint8_t *p, uint32_t v);
void wire_put64(uint8_t *p, uint64_t v);
uint32_t wire_get32(const uint8_t *p);
uint64_t wire_get64(const uint8_t *p);
/* RFC 5044 4.1: ULPDU_Length | ULPDU | pad to 4 | CRC32c, least
 * significant byte first, into @out (room for @len + 8); its length. */
size_t wire_fpdu_build(const uint8_t *ulpdu, size_t len, uint8_t *out);
/* Up to @n bytes within @timeout_ms each: fewer when the provider closed;
 * no byte at all in time fails the test. */
size_t wire_read(int fd, uint8_t *p, size_t n, int timeout_ms);
/* Exactly @n bytes, or the test fails. */
void wire_read_all(int fd, uint8_t *p, size_t n);
void wire_write(int fd, const void *p, size_t n);

/* interop_raw.c: the raw peer of the golden tests (CRC on). */
/* One FPDU of the ULPDU @ulpdu (@len <= 1024 bytes) to the provider. */
void raw_fpdu(int fd, const uint8_t *ulpdu, size_t len);
/* One FPDU from the provider (CRC checked): the ULPDU's length, or -1
 * when the provider closed first. */
int raw_fpdu_read(int fd, uint8_t *ulpdu);
/* The CONNECT_REQUEST of listener @lctx within @ms, or NULL. */
rnicpi_cm_event_t *raw_poll_request(cert_t *f, uint64_t lctx, guint ms);
/* The test connects with the golden Request and the provider accepts on
 * @s (it is the MPA Responder, CRC on): the socket, in full operation. */
int raw_passive(cert_t *f, cert_side_t *s, uint64_t lctx);
/* A TCP listener at the device's address (port: the kernel's choice), to
 * which the provider is to connect: its descriptor; @dst, its address. */
int raw_listen(cert_t *f, rnicpi_addr_t *dst);
/* The provider's connection to @lfd within INTEROP_RAW_WAIT_MS, accepted
 * (TCP_NODELAY); @lfd is closed. */
int raw_accept(int lfd);
/* The provider connects @s to the test (it is the MPA Initiator): the
 * socket after its Request, read whole, the Reply not sent. */
int raw_request_in(cert_t *f, cert_side_t *s);
/* raw_request_in answered by a Rev 1 Reply, C=1, no private data: the
 * socket, in full operation. */
int raw_active(cert_t *f, cert_side_t *s);
/* RFC 5041 4.3 untagged header + RFC 5040 4.1 control, in @u. */
void raw_untagged_hdr(uint8_t *u, uint8_t ddp_ctrl, uint8_t rdmap_ctrl, uint32_t qn, uint32_t msn,
                      uint32_t mo);
/* The Read raw_read_out posts: RD_LEN bytes from the raw peer's
 * RD_SRC_STAG/RD_SRC_TO. */
#define RD_LEN 64u
#define RD_SRC_STAG 0x22222200u
#define RD_SRC_TO 0x3000u
/* The provider posts an RDMA Read (@id) into @sink at offset 64: its Read
 * Request is checked (RFC 5040 4.4) and left in @req. */
void raw_read_out(cert_side_t *s, int fd, const cert_buf_t *sink, uint64_t id, uint8_t *req);
/* A Read Response segment of @len pattern bytes to @stag/@to, L as @last;
 * its 14-byte header in @hdr. */
void raw_read_resp(int fd, uint32_t stag, uint64_t to, uint32_t len, gboolean last, uint8_t *hdr);
/* After an orderly disconnect: answers the provider's close fence (a
 * zero-length Read Request) if it sends one first: TRUE, the FIN is still
 * to come; FALSE when its stream ended. */
gboolean raw_close_fence(int fd);

void interop_register_golden(void);
void interop_register_golden2(void);
void interop_register_golden_mpa(void);
void interop_register_peer(void);

#endif
