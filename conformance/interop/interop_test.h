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

void interop_register_golden(void);
void interop_register_golden2(void);
void interop_register_peer(void);

#endif
