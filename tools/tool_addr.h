/*
 * tools/tool_addr.h: the address at which an IT-API tool reaches its own
 * interface (itapi-perf's loopback mode, itapi-rping's client without -a,
 * itapi-test's pairs).  It does not need the tool's die(); include it
 * after <it_api.h>, which the tool includes with the bindings it chose.
 *
 * The rule is the conformance suite's (doc/certification.md): the first
 * address the interface lists, 127.0.0.1 only when it lists none.  An
 * RNIC, and rdma_cm over rxe or siw, reaches peers only through its port's
 * addresses; 127.0.0.1 is none of them.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef ITAPI_TOOL_ADDR_H
#define ITAPI_TOOL_ADDR_H

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

/* The first network address @ia lists for spigot 0 (it_ia_query), or
 * 127.0.0.1 when it lists none, into @out; the status of it_ia_query
 * otherwise (@out untouched). */
static inline it_status_t
tool_self_addr(it_ia_handle_t ia, it_net_addr_t *out)
{
  it_ia_info_t *info = NULL;
  it_status_t st = it_ia_query(ia, &info);
  if (st != IT_SUCCESS)
    return st;
  it_net_addr_t a;
  memset(&a, 0, sizeof(a));
  a.addr_type = IT_IPV4;
  a.addr.ipv4.s_addr = htonl(INADDR_LOOPBACK);
  if (info->num_spigots > 0 && info->spigot_info[0].num_net_addr > 0)
    a = info->spigot_info[0].net_addr[0];
  it_ia_info_free(info);
  *out = a;
  return IT_SUCCESS;
}

/* @a in text ("10.9.0.1", "fd00::2") in @buf of @len bytes (at least
 * INET6_ADDRSTRLEN), for messages. */
static inline const char *
tool_addr_str(const it_net_addr_t *a, char *buf, size_t len)
{
  if (a->addr_type == IT_IPV4)
    inet_ntop(AF_INET, &a->addr.ipv4, buf, (socklen_t) len);
  else if (a->addr_type == IT_IPV6)
    inet_ntop(AF_INET6, &a->addr.ipv6, buf, (socklen_t) len);
  else if (a->addr_type == IT_IB_GID)
    inet_ntop(AF_INET6, &a->addr.gid, buf, (socklen_t) len);
  else
    snprintf(buf, len, "(address type %d)", (int) a->addr_type);
  return buf;
}

#endif /* ITAPI_TOOL_ADDR_H */
