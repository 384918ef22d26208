/*
 * tools/tool_util.h: what the IT-API tools here share (itapi-perf,
 * itapi-rping).  Include it after declaring the tool's own
 * die(const char *fmt, ...), which prints with the tool's prefix and exits.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef ITAPI_TOOL_UTIL_H
#define ITAPI_TOOL_UTIL_H

#include <string.h>

#include <it_api.h>

#include <itx.h>

#include "tool_addr.h" /* tool_self_addr(): where a tool reaches its own interface */

/* Exit naming the IT-API call that failed, its status and
 * itx_error_detail(). */
static inline void __attribute__((noreturn))
it_die(const char *call, it_status_t st)
{
  /* itx_error_detail() belongs to this thread's last failed call: read it
   * before anything else can fail. */
  const char *detail = itx_error_detail();
  die("%s failed: %s (%s)%s%s", call, itx_status_name(st), itx_status_message(st),
      *detail ? ": " : "", detail);
}

/* IT(it_foo, a, b) calls it_foo(a, b) and exits through it_die on failure. */
#define IT(fn, ...)                                                            \
  do {                                                                         \
    it_status_t st_ = fn(__VA_ARGS__);                                         \
    if (st_ != IT_SUCCESS)                                                     \
      it_die(#fn, st_);                                                        \
  } while (0)

/* The reason a non-peer reject (IT_CM_MSG_CONN_NONPEER_REJECT_EVENT)
 * carries, in words. */
static inline const char *
tool_reject_reason(it_conn_reject_code_t c)
{
  static const char *const why[] = { "other", "timeout", "bad path", "stale connection",
                                     "bad ORD", "resources", "bad connection parameters" };
  return (unsigned) c < sizeof(why) / sizeof(why[0]) ? why[c] : "unknown";
}

/* The attributes of an RC EP for messages of up to @payload bytes, with
 * @sq send and @rq receive DTOs, one segment each, RDMA Read and Write on;
 * the read depths are the caller's to set. */
static inline void
tool_rc_attr(it_ep_attributes_t *a, size_t payload, size_t sq, size_t rq)
{
  memset(a, 0, sizeof(*a));
  a->max_dto_payload_size = payload;
  a->max_request_dtos = sq;
  a->max_recv_dtos = rq;
  a->max_send_segments = 1;
  a->max_recv_segments = 1;
  a->srv.rc.rdma_read_enable = IT_TRUE;
  a->srv.rc.rdma_write_enable = IT_TRUE;
  a->srv.rc.max_rdma_read_segments = 1;
  a->srv.rc.max_rdma_write_segments = 1;
}

#endif /* ITAPI_TOOL_UTIL_H */
