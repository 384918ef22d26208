/*
 * Unit tests of libdaplitapi through libdat2, as a DAT consumer sees it:
 * the handle model (a freed, forged or other-typed handle is refused with
 * DAT_INVALID_HANDLE and the right subtype; a freed handle is never handed
 * out again), a stale lmr_context, software events and dat_evd_wait's
 * timeout, CNOs and their descriptor (dat_cno_fd_create, dat_cno_trigger),
 * shared receive queues (stale handles, an SRQ in use, a Send landing
 * through one), RMRs (bound and used by the peer's RDMA Write and Read,
 * unbound and refused, invalidated by a Send with Invalidate, a sink of
 * RDMA Read to RMR, stale handles), DAT's IB extensions (atomics, RDMA
 * Write with immediate data, the attribute query) where the interface has
 * them, a connection request handed to another PSP or accepted on the EP
 * the provider made for it, EVDs resized and made
 * unwaitable, an EP's receive count and watermarks, an LMR made from
 * another, dat_ia_ha_related's answer, and DAT_NOT_IMPLEMENTED or
 * DAT_MODEL_NOT_SUPPORTED for what the provider does not offer.
 *
 *   DAT_OVERRIDE=build/dat/dat.conf test-dat-objects [interface]
 *
 * SPDX-License-Identifier: MIT
 */
#include <netinet/in.h>

#include <dat2/udat.h>
#include <dat2/dat_ib_extensions.h>
#include <dat2/dat_registry.h>
#include <itx.h>

#include <glib.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

static char provider[DAT_NAME_MAX_LENGTH] = "itapi-emul-iw0";

#define assert_dat(ret, want) g_assert_cmphex((guint) (ret), ==, (guint) (want))
#define DAT_ERR(t, s) (DAT_CLASS_ERROR | (t) | (s))

/* libdat2 2.1.10 exports no dat_rmr_create_for_ep, dat_ep_post_send_with_invalidate,
 * dat_ep_post_rdma_read_to_rmr, dat_cno_fd_create or dat_cno_trigger: a
 * consumer reaches them through the provider's table, as libdat2's own
 * redirection does (DAT_HANDLE_TO_PROVIDER). */
static DAT_PROVIDER *
prov_of(DAT_HANDLE handle)
{
  return *(DAT_PROVIDER **) handle;
}

typedef struct {
  DAT_IA_HANDLE ia;
  DAT_EVD_HANDLE async;
  DAT_PZ_HANDLE pz;
} fixture_t;

static void
open_ia(fixture_t *f, gconstpointer data)
{
  (void) data;
  f->async = DAT_HANDLE_NULL;
  assert_dat(dat_ia_open(provider, 8, &f->async, &f->ia), DAT_SUCCESS);
  g_assert_nonnull(f->async);
  assert_dat(dat_pz_create(f->ia, &f->pz), DAT_SUCCESS);
}

static void
close_ia(fixture_t *f, gconstpointer data)
{
  (void) data;
  assert_dat(dat_ia_close(f->ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
}

static void
test_ia_query(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("dat_ia_query gives an AF_INET address and the interface's private-data limit");
  DAT_IA_ATTR ia_attr;
  DAT_PROVIDER_ATTR pr_attr;
  assert_dat(dat_ia_query(f->ia, NULL, DAT_IA_FIELD_ALL, &ia_attr,
                          DAT_PROVIDER_FIELD_ALL, &pr_attr), DAT_SUCCESS);
  g_assert_nonnull(ia_attr.ia_address_ptr);
  g_assert_cmpint(ia_attr.ia_address_ptr->sa_family, ==, AF_INET);
  g_assert_cmpint(pr_attr.max_private_data_size, >=, 48);
  g_assert_cmpstr(pr_attr.provider_name, ==, provider);
}

/* The IT-API interface behind the IA (its DAT_ITAPI_INTERFACE attribute). */
static const char *
ia_interface(const DAT_PROVIDER_ATTR *pr_attr)
{
  for (int i = 0; i < pr_attr->num_provider_specific_attr; i++)
    if (strcmp(pr_attr->provider_specific_attr[i].name, "DAT_ITAPI_INTERFACE") == 0)
      return pr_attr->provider_specific_attr[i].value;
  return NULL;
}

static void
test_ia_device_limits(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("dat_ia_query's RDMA Read depths and segment counts are the device's "
                 "(itx_interface_caps), at most the 32 segments a post takes, and an EP made "
                 "with all of them is created and reports them");
  DAT_IA_ATTR ia_attr;
  DAT_PROVIDER_ATTR pr_attr;
  assert_dat(dat_ia_query(f->ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, DAT_PROVIDER_FIELD_ALL, &pr_attr),
             DAT_SUCCESS);
  const char *iface = ia_interface(&pr_attr);
  g_assert_nonnull(iface);
  itx_caps_t caps;
  g_assert_cmpint(itx_interface_caps(iface, &caps), ==, IT_SUCCESS);
  g_assert_cmpint(ia_attr.max_rdma_read_per_ep_in, ==, (DAT_COUNT) caps.max_ird);
  g_assert_cmpint(ia_attr.max_rdma_read_per_ep_out, ==, (DAT_COUNT) caps.max_ord);
  g_assert_cmpint(ia_attr.max_rdma_read_in, ==, (DAT_COUNT) caps.max_ird);
  g_assert_cmpint(ia_attr.max_rdma_read_out, ==, (DAT_COUNT) caps.max_ord);
  g_assert_cmpint(ia_attr.max_iov_segments_per_dto, ==,
                  (DAT_COUNT) MIN(MIN(caps.max_send_sge, caps.max_recv_sge), 32u));
  g_assert_cmpint(ia_attr.max_iov_segments_per_rdma_read, ==, (DAT_COUNT) MIN(caps.max_rdma_read_sge, 32u));
  g_assert_cmpint(ia_attr.max_iov_segments_per_rdma_write, ==, (DAT_COUNT) MIN(caps.max_rdma_write_sge, 32u));

  DAT_EVD_HANDLE dto, conn;
  assert_dat(dat_evd_create(f->ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn), DAT_SUCCESS);
  DAT_EP_ATTR ea = { .service_type = DAT_SERVICE_TYPE_RC, .max_message_size = 4096,
                     .max_rdma_size = 4096, .max_request_dtos = 8, .max_recv_dtos = 8,
                     .max_request_iov = ia_attr.max_iov_segments_per_dto,
                     .max_recv_iov = ia_attr.max_iov_segments_per_dto,
                     .max_rdma_read_in = ia_attr.max_rdma_read_per_ep_in,
                     .max_rdma_read_out = ia_attr.max_rdma_read_per_ep_out,
                     .max_rdma_read_iov = ia_attr.max_iov_segments_per_rdma_read,
                     .max_rdma_write_iov = ia_attr.max_iov_segments_per_rdma_write };
  DAT_EP_HANDLE ep;
  assert_dat(dat_ep_create(f->ia, f->pz, dto, dto, conn, &ea, &ep), DAT_SUCCESS);
  DAT_EP_PARAM p;
  assert_dat(dat_ep_query(ep, DAT_EP_FIELD_ALL, &p), DAT_SUCCESS);
  g_assert_cmpint(p.ep_attr.max_rdma_read_in, ==, ea.max_rdma_read_in);
  g_assert_cmpint(p.ep_attr.max_rdma_read_out, ==, ea.max_rdma_read_out);
  g_assert_cmpint(p.ep_attr.max_request_iov, >=, ea.max_request_iov);
  g_assert_cmpint(p.ep_attr.max_recv_iov, >=, ea.max_recv_iov);
  assert_dat(dat_ep_free(ep), DAT_SUCCESS);
  assert_dat(dat_evd_free(dto), DAT_SUCCESS);
  assert_dat(dat_evd_free(conn), DAT_SUCCESS);
}

/* The provider's own IA handle (libdat2 hands out IA handles of its own). */
static DAT_IA_HANDLE
provider_ia(fixture_t *f)
{
  DAT_PZ_PARAM pp;
  assert_dat(dat_pz_query(f->pz, DAT_PZ_FIELD_IA_HANDLE, &pp), DAT_SUCCESS);
  return pp.ia_handle;
}

static void
test_ia_ha_related(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("dat_ia_ha_related answers DAT_FALSE for the IA's own name and any other, as "
                 "ha_supported says; a NULL name or answer is refused");
  DAT_IA_HANDLE ia = provider_ia(f);
  DAT_IA_ATTR ia_attr;
  DAT_PROVIDER_ATTR pr_attr;
  assert_dat(dat_ia_query(f->ia, NULL, 0, &ia_attr, DAT_PROVIDER_FIELD_HA_SUPPORTED, &pr_attr),
             DAT_SUCCESS);
  g_assert_cmpint(pr_attr.ha_supported, ==, DAT_FALSE);
  DAT_BOOLEAN answer = DAT_TRUE;
  assert_dat(prov_of(ia)->ia_ha_related_func(ia, provider, &answer), DAT_SUCCESS);
  g_assert_cmpint(answer, ==, DAT_FALSE);
  answer = DAT_TRUE;
  assert_dat(prov_of(ia)->ia_ha_related_func(ia, "no-such-ia0", &answer), DAT_SUCCESS);
  g_assert_cmpint(answer, ==, DAT_FALSE);
  assert_dat(prov_of(ia)->ia_ha_related_func(ia, NULL, &answer),
             DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2));
  assert_dat(prov_of(ia)->ia_ha_related_func(ia, provider, NULL),
             DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));
  assert_dat(prov_of(ia)->ia_ha_related_func(f->pz, provider, &answer),
             DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA));
}

static void
test_stale_handle(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a freed PZ is refused as DAT_INVALID_HANDLE_PZ and its handle is not reused");
  DAT_PZ_HANDLE pz, pz2;
  assert_dat(dat_pz_create(f->ia, &pz), DAT_SUCCESS);
  assert_dat(dat_pz_free(pz), DAT_SUCCESS);
  assert_dat(dat_pz_free(pz), DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ));
  DAT_PZ_PARAM param;
  assert_dat(dat_pz_query(pz, DAT_PZ_FIELD_ALL, &param),
             DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ));
  for (int i = 0; i < 64; i++) {
    assert_dat(dat_pz_create(f->ia, &pz2), DAT_SUCCESS);
    g_assert_true(pz2 != pz);
    assert_dat(dat_pz_free(pz2), DAT_SUCCESS);
  }
}

static void
test_forged_handle(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a handle that is not one of ours, or of another type, is refused");
  /* Readable memory whose first word is the provider, as libdat2 needs to
   * reach it: the provider must still refuse it. */
  void *forged[8];
  memset(forged, 0, sizeof(forged));
  forged[0] = *(void **) f->pz;
  assert_dat(dat_pz_free((DAT_PZ_HANDLE) forged), DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ));
  assert_dat(dat_pz_free((DAT_PZ_HANDLE) f->async),
             DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ));
  DAT_HANDLE_TYPE type;
  assert_dat(dat_get_handle_type(f->pz, &type), DAT_SUCCESS);
  g_assert_cmpint(type, ==, DAT_HANDLE_TYPE_PZ);
  assert_dat(dat_get_handle_type(f->async, &type), DAT_SUCCESS);
  g_assert_cmpint(type, ==, DAT_HANDLE_TYPE_EVD);
}

static void
test_stale_lmr_context(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a post naming a freed LMR's lmr_context, or on a freed EP, is refused with "
                 "its status, a Send or an RDMA Write (which hold nothing) as a receive");
  static char buf[4096];
  DAT_REGION_DESCRIPTION region = { .for_va = buf };
  DAT_LMR_HANDLE lmr;
  DAT_LMR_CONTEXT lctx;
  DAT_RMR_CONTEXT rctx;
  DAT_VLEN len;
  DAT_VADDR addr;
  assert_dat(dat_lmr_create(f->ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(buf), f->pz,
                            DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr, &lctx, &rctx, &len, &addr),
             DAT_SUCCESS);
  g_assert_cmpuint(len, ==, sizeof(buf));
  g_assert_cmpuint(addr, ==, (DAT_VADDR) (uintptr_t) buf);
  DAT_LMR_PARAM lp;
  assert_dat(dat_lmr_query(lmr, DAT_LMR_FIELD_ALL, &lp), DAT_SUCCESS);
  g_assert_cmpuint(lp.lmr_context, ==, lctx);
  g_assert_cmpuint(lp.rmr_context, ==, rctx);

  DAT_EVD_HANDLE dto, conn;
  assert_dat(dat_evd_create(f->ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn), DAT_SUCCESS);
  DAT_EP_HANDLE ep;
  assert_dat(dat_ep_create(f->ia, f->pz, dto, dto, conn, NULL, &ep), DAT_SUCCESS);
  assert_dat(dat_evd_free(dto), DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE));
  DAT_LMR_TRIPLET iov = { .virtual_address = (DAT_VADDR) (uintptr_t) buf, .segment_length = 64,
                          .lmr_context = lctx };
  DAT_DTO_COOKIE cookie = { .as_64 = 1 };
  assert_dat(dat_lmr_free(lmr), DAT_SUCCESS);
  assert_dat(dat_ep_post_recv(ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG),
             DAT_ERR(DAT_PROTECTION_VIOLATION, DAT_PROTECTION_READ));
  DAT_RMR_TRIPLET remote = { .virtual_address = (DAT_VADDR) (uintptr_t) buf, .segment_length = 64,
                             .rmr_context = rctx };
  assert_dat(dat_ep_post_send(ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG),
             DAT_ERR(DAT_PROTECTION_VIOLATION, DAT_PROTECTION_READ));
  assert_dat(dat_ep_post_rdma_write(ep, 1, &iov, cookie, &remote, DAT_COMPLETION_DEFAULT_FLAG),
             DAT_ERR(DAT_PROTECTION_VIOLATION, DAT_PROTECTION_READ));
  assert_dat(dat_lmr_free(lmr), DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_LMR));
  DAT_EP_STATE state;
  DAT_BOOLEAN idle1, idle2;
  assert_dat(dat_ep_get_status(ep, &state, &idle1, &idle2), DAT_SUCCESS);
  g_assert_cmpint(state, ==, DAT_EP_STATE_UNCONNECTED);
  /* Every output is optional (dtestx asks for the idle flags alone). */
  idle1 = idle2 = 7;
  assert_dat(dat_ep_get_status(ep, NULL, &idle1, &idle2), DAT_SUCCESS);
  g_assert_true(idle1 == DAT_FALSE || idle1 == DAT_TRUE);
  g_assert_true(idle2 == DAT_FALSE || idle2 == DAT_TRUE);
  assert_dat(dat_ep_get_status(ep, NULL, NULL, NULL), DAT_SUCCESS);
  assert_dat(dat_ep_reset(ep), DAT_SUCCESS); /* an Unconnected EP: nothing to do */
  assert_dat(dat_ep_free(ep), DAT_SUCCESS);
  assert_dat(dat_ep_free(ep), DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP));
  iov.segment_length = 0; /* names no LMR: the EP alone is checked */
  assert_dat(dat_ep_post_send(ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG),
             DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP));
  assert_dat(dat_ep_post_rdma_write(ep, 1, &iov, cookie, &remote, DAT_COMPLETION_DEFAULT_FLAG),
             DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP));
  assert_dat(dat_evd_free(dto), DAT_SUCCESS);
  assert_dat(dat_evd_free(conn), DAT_SUCCESS);
}

/* Posts to @p evd a software event carrying @p pointer. */
static void
post_software_event(DAT_EVD_HANDLE evd, void *pointer)
{
  DAT_EVENT ev;
  memset(&ev, 0, sizeof(ev));
  ev.event_number = DAT_SOFTWARE_EVENT;
  ev.event_data.software_event_data.pointer = pointer;
  assert_dat(dat_evd_post_se(evd, &ev), DAT_SUCCESS);
}

static void
test_software_events(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("software events come back as posted; an empty EVD times out in dat_evd_wait");
  DAT_EVD_HANDLE evd;
  assert_dat(dat_evd_create(f->ia, 4, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &evd), DAT_SUCCESS);
  DAT_EVENT ev, out;
  DAT_COUNT nmore;
  memset(&ev, 0, sizeof(ev));
  ev.event_number = DAT_SOFTWARE_EVENT;
  ev.event_data.software_event_data.pointer = &ev;
  assert_dat(dat_evd_post_se(evd, &ev), DAT_SUCCESS);
  assert_dat(dat_evd_post_se(evd, &ev), DAT_SUCCESS);
  assert_dat(dat_evd_dequeue(evd, &out), DAT_SUCCESS);
  g_assert_cmpint(out.event_number, ==, DAT_SOFTWARE_EVENT);
  g_assert_true(out.event_data.software_event_data.pointer == &ev);
  g_assert_true(out.evd_handle == evd);
  assert_dat(dat_evd_wait(evd, 1000, 1, &out, &nmore), DAT_SUCCESS);
  g_assert_cmpint(nmore, ==, 0);
  assert_dat(dat_evd_dequeue(evd, &out), DAT_QUEUE_EMPTY);
  gint64 t0 = g_get_monotonic_time();
  DAT_RETURN ret = dat_evd_wait(evd, 20000, 1, &out, &nmore);
  g_assert_cmphex(DAT_GET_TYPE(ret), ==, DAT_TIMEOUT_EXPIRED);
  g_assert_cmpint(g_get_monotonic_time() - t0, >=, 15000);
  assert_dat(dat_evd_wait(evd, 1000, 5, &out, &nmore),
             DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));

  /* A threshold not met by the timeout takes no event (DAT 2.0 6.3.2.8);
   * the events come out in the order they were posted. */
  DAT_EVENT ev2 = ev;
  ev2.event_data.software_event_data.pointer = &ev2;
  assert_dat(dat_evd_post_se(evd, &ev), DAT_SUCCESS);
  ret = dat_evd_wait(evd, 20000, 2, &out, &nmore);
  g_assert_cmphex(DAT_GET_TYPE(ret), ==, DAT_TIMEOUT_EXPIRED);
  assert_dat(dat_evd_post_se(evd, &ev2), DAT_SUCCESS);
  assert_dat(dat_evd_wait(evd, 20000, 2, &out, &nmore), DAT_SUCCESS);
  g_assert_true(out.event_data.software_event_data.pointer == &ev);
  g_assert_cmpint(nmore, ==, 1);
  assert_dat(dat_evd_dequeue(evd, &out), DAT_SUCCESS);
  g_assert_true(out.event_data.software_event_data.pointer == &ev2);
  assert_dat(dat_evd_dequeue(evd, &out), DAT_QUEUE_EMPTY);
  assert_dat(dat_evd_free(evd), DAT_SUCCESS);
  assert_dat(dat_evd_dequeue(evd, &out), DAT_ERR(DAT_INVALID_HANDLE, 0));
}

static void
test_cno(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a CNO wakes for an EVD's new events once, times out, and is in use while EVDs have it");
  DAT_CNO_HANDLE cno;
  assert_dat(dat_cno_create(f->ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno), DAT_SUCCESS);
  DAT_EVD_HANDLE evd, found = DAT_HANDLE_NULL;
  assert_dat(dat_evd_create(f->ia, 4, cno, DAT_EVD_SOFTWARE_FLAG, &evd), DAT_SUCCESS);
  DAT_EVD_PARAM param;
  assert_dat(dat_evd_query(evd, DAT_EVD_FIELD_CNO, &param), DAT_SUCCESS);
  g_assert_true(param.cno_handle == cno);
  DAT_RETURN ret = dat_cno_wait(cno, 10000, &found);
  g_assert_cmphex(DAT_GET_TYPE(ret), ==, DAT_TIMEOUT_EXPIRED);
  post_software_event(evd, NULL);
  assert_dat(dat_cno_wait(cno, 1000000, &found), DAT_SUCCESS);
  g_assert_true(found == evd);
  /* Notified once: the event left queued does not wake it again. */
  ret = dat_cno_wait(cno, 10000, &found);
  g_assert_cmphex(DAT_GET_TYPE(ret), ==, DAT_TIMEOUT_EXPIRED);
  DAT_EVENT out;
  assert_dat(dat_evd_dequeue(evd, &out), DAT_SUCCESS);
  assert_dat(dat_cno_free(cno), DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_IN_USE));
  assert_dat(dat_evd_free(evd), DAT_SUCCESS);
  assert_dat(dat_cno_free(cno), DAT_SUCCESS);
  assert_dat(dat_cno_free(cno), DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO));
}

static gboolean
fd_readable(int fd, int ms)
{
  struct pollfd pfd = { .fd = fd, .events = POLLIN };
  return poll(&pfd, 1, ms) == 1 && (pfd.revents & POLLIN);
}

static void
test_cno_fd(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a CNO made by dat_cno_fd_create has a descriptor readable when an EVD of it "
                 "gets an event; dat_cno_trigger names that EVD without waiting and rearms it");
  DAT_CNO_HANDLE cno;
  DAT_FD fd = -1;
  /* libdat2 hands out IA handles of its own: the provider's is the PZ's IA. */
  DAT_PZ_PARAM pp;
  assert_dat(dat_pz_query(f->pz, DAT_PZ_FIELD_ALL, &pp), DAT_SUCCESS);
  assert_dat(prov_of(pp.ia_handle)->cno_fd_create_func(pp.ia_handle, &fd, &cno), DAT_SUCCESS);
  g_assert_cmpint(fd, >=, 0);
  DAT_EVD_HANDLE evd, found = DAT_HANDLE_NULL;
  assert_dat(dat_evd_create(f->ia, 4, cno, DAT_EVD_SOFTWARE_FLAG, &evd), DAT_SUCCESS);
  g_assert_false(fd_readable(fd, 0));
  assert_dat(prov_of(cno)->cno_trigger_func(cno, &found), DAT_SUCCESS);
  g_assert_true(found == DAT_HANDLE_NULL);
  post_software_event(evd, NULL);
  g_assert_true(fd_readable(fd, 5000));
  assert_dat(prov_of(cno)->cno_trigger_func(cno, &found), DAT_SUCCESS);
  g_assert_true(found == evd);
  /* Taken: the descriptor is quiet until the next notification. */
  g_assert_false(fd_readable(fd, 0));
  DAT_EVENT out;
  assert_dat(dat_evd_dequeue(evd, &out), DAT_SUCCESS);
  g_assert_cmphex(out.event_number, ==, DAT_SOFTWARE_EVENT);
  post_software_event(evd, NULL);
  g_assert_true(fd_readable(fd, 5000));
  assert_dat(dat_cno_wait(cno, 1000000, &found), DAT_SUCCESS);
  g_assert_true(found == evd);
  assert_dat(dat_evd_free(evd), DAT_SUCCESS);
  assert_dat(dat_cno_free(cno), DAT_SUCCESS);
  assert_dat(prov_of(cno)->cno_trigger_func(cno, &found),
             DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO));
}

/* A thread blocked in dat_evd_wait or dat_cno_wait, and what it got. */
typedef struct {
  DAT_HANDLE handle;  /* the EVD or CNO waited on */
  DAT_TIMEOUT timeout;
  DAT_RETURN ret;
  DAT_EVENT event;    /* dat_evd_wait's */
  DAT_EVD_HANDLE evd; /* dat_cno_wait's */
  gint started;       /* set just before the call */
} waiter_t;

static gpointer
evd_waiter(gpointer data)
{
  waiter_t *w = data;
  DAT_COUNT nmore;
  g_atomic_int_set(&w->started, 1);
  w->ret = dat_evd_wait(w->handle, w->timeout, 1, &w->event, &nmore);
  return NULL;
}

static gpointer
cno_waiter(gpointer data)
{
  waiter_t *w = data;
  g_atomic_int_set(&w->started, 1);
  w->ret = dat_cno_wait(w->handle, w->timeout, &w->evd);
  return NULL;
}

/* Once the thread is about to call, long enough for it to be blocked
 * inside the provider. */
#define WAITER_SETTLE_US (200 * 1000)

static void
waiter_settle(waiter_t *w)
{
  while (!g_atomic_int_get(&w->started))
    g_usleep(1000);
  g_usleep(WAITER_SETTLE_US);
}

/* A thread dequeuing from an EVD while another posts to it and frees it. */
typedef struct {
  DAT_EVD_HANDLE evd;
  int mark;
  gint freed;     /* the free returned (atomic) */
  guint taken, empty;
} dequeue_race_t;

/* Dequeues until a dequeue begun after the free is refused as an invalid
 * handle; before it, each takes one of the events posted or finds none. */
static gpointer
race_dequeue(gpointer data)
{
  dequeue_race_t *r = data;
  for (;;) {
    gboolean after = g_atomic_int_get(&r->freed);
    DAT_EVENT ev;
    DAT_RETURN ret = dat_evd_dequeue(r->evd, &ev);
    if (ret == DAT_SUCCESS) {
      g_assert_false(after);
      g_assert_cmphex(ev.event_number, ==, DAT_SOFTWARE_EVENT);
      g_assert_true(ev.evd_handle == r->evd);
      g_assert_true(ev.event_data.software_event_data.pointer == &r->mark);
      r->taken++;
    } else if (DAT_GET_TYPE(ret) == DAT_QUEUE_EMPTY) {
      g_assert_false(after);
      r->empty++;
    } else {
      assert_dat(ret, DAT_ERR(DAT_INVALID_HANDLE, 0));
      if (after)
        return NULL;
    }
  }
}

static void
test_evd_dequeue_free_race(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an EVD freed while another thread dequeues from it is freed, not refused "
                 "(a dequeue does not wait): a dequeue begun before takes an event or finds "
                 "none, one begun after the free returned is refused as an invalid handle");
  gint64 end = g_get_monotonic_time() + G_USEC_PER_SEC;
  guint rounds = 0, taken = 0, empty = 0;
  do {
    dequeue_race_t r = { 0 };
    /* Two streams: the dequeue goes through IT-API's aggregate. */
    assert_dat(dat_evd_create(f->ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG | DAT_EVD_SOFTWARE_FLAG,
                              &r.evd), DAT_SUCCESS);
    GThread *t = g_thread_new("race-dequeue", race_dequeue, &r);
    for (int i = 0; i < 8; i++)
      post_software_event(r.evd, &r.mark);
    g_usleep(g_random_int_range(0, 200));
    assert_dat(dat_evd_free(r.evd), DAT_SUCCESS);
    g_atomic_int_set(&r.freed, 1);
    g_thread_join(t);
    DAT_EVD_PARAM param;
    assert_dat(dat_evd_query(r.evd, DAT_EVD_FIELD_ALL, &param), DAT_ERR(DAT_INVALID_HANDLE, 0));
    taken += r.taken;
    empty += r.empty;
    rounds++;
  } while (g_get_monotonic_time() < end);
  g_test_message("%u rounds, %u events taken, %u dequeues found none", rounds, taken, empty);
  g_assert_cmpuint(taken, >, 0);
}

static void
test_evd_free_waited(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("dat_evd_free of an EVD another thread waits on is refused as in use, and the "
                 "waiter still gets its event");
  DAT_EVD_HANDLE evd;
  assert_dat(dat_evd_create(f->ia, 4, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &evd), DAT_SUCCESS);
  waiter_t w = { .handle = evd, .timeout = 30 * 1000 * 1000 };
  GThread *t = g_thread_new("evd-waiter", evd_waiter, &w);
  waiter_settle(&w);
  assert_dat(dat_evd_free(evd), DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE));
  post_software_event(evd, &w);
  g_thread_join(t);
  assert_dat(w.ret, DAT_SUCCESS);
  g_assert_cmpint(w.event.event_number, ==, DAT_SOFTWARE_EVENT);
  g_assert_true(w.event.event_data.software_event_data.pointer == &w);
  assert_dat(dat_evd_free(evd), DAT_SUCCESS);
  assert_dat(dat_evd_free(evd), DAT_ERR(DAT_INVALID_HANDLE, 0));
}

static void
test_evd_unwaitable(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("dat_evd_set_unwaitable wakes a thread waiting on the EVD with DAT_INVALID_STATE, "
                 "refuses later waits at once, and leaves events to dat_evd_dequeue; "
                 "dat_evd_clear_unwaitable makes waits work again");
  DAT_EVD_HANDLE dto, sw;
  assert_dat(dat_evd_create(f->ia, 4, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 4, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &sw), DAT_SUCCESS);
  const DAT_RETURN unwaitable = DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_UNWAITABLE);
  DAT_EVD_HANDLE evds[] = { dto, sw };
  for (size_t i = 0; i < G_N_ELEMENTS(evds); i++) {
    /* A waiter with no timeout, on an EVD nothing will post to. */
    waiter_t w = { .handle = evds[i], .timeout = DAT_TIMEOUT_INFINITE };
    GThread *t = g_thread_new("evd-waiter", evd_waiter, &w);
    waiter_settle(&w);
    DAT_EVENT ev;
    DAT_COUNT nmore;
    /* One waiter per EVD. */
    assert_dat(dat_evd_wait(evds[i], 1000, 1, &ev, &nmore),
               DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_WAITER));
    gint64 t0 = g_get_monotonic_time();
    assert_dat(dat_evd_set_unwaitable(evds[i]), DAT_SUCCESS);
    g_thread_join(t);
    assert_dat(w.ret, unwaitable);
    g_assert_cmpint(g_get_monotonic_time() - t0, <, 2 * 1000 * 1000);
    DAT_EVD_PARAM param;
    assert_dat(dat_evd_query(evds[i], DAT_EVD_FIELD_EVD_STATE, &param), DAT_SUCCESS);
    g_assert_cmphex(param.evd_state & (DAT_EVD_STATE_WAITABLE | DAT_EVD_STATE_UNWAITABLE), ==,
                    DAT_EVD_STATE_UNWAITABLE);
    g_assert_cmphex(param.evd_state & DAT_EVD_STATE_ENABLED, ==, DAT_EVD_STATE_ENABLED);
    t0 = g_get_monotonic_time();
    assert_dat(dat_evd_wait(evds[i], DAT_TIMEOUT_INFINITE, 1, &ev, &nmore), unwaitable);
    g_assert_cmpint(g_get_monotonic_time() - t0, <, 1000 * 1000);
  }

  /* Unwaitable, the EVD still takes events, and dequeue hands them out. */
  DAT_EVENT out;
  DAT_COUNT nmore;
  int mark;
  post_software_event(sw, &mark);
  post_software_event(sw, &mark);
  assert_dat(dat_evd_wait(sw, 1000, 1, &out, &nmore), unwaitable);
  assert_dat(dat_evd_dequeue(sw, &out), DAT_SUCCESS);
  g_assert_true(out.event_data.software_event_data.pointer == &mark);
  assert_dat(dat_evd_clear_unwaitable(sw), DAT_SUCCESS);
  DAT_EVD_PARAM param;
  assert_dat(dat_evd_query(sw, DAT_EVD_FIELD_EVD_STATE, &param), DAT_SUCCESS);
  g_assert_cmphex(param.evd_state & (DAT_EVD_STATE_WAITABLE | DAT_EVD_STATE_UNWAITABLE), ==,
                  DAT_EVD_STATE_WAITABLE);
  assert_dat(dat_evd_wait(sw, 1000 * 1000, 1, &out, &nmore), DAT_SUCCESS);
  g_assert_true(out.event_data.software_event_data.pointer == &mark);
  g_assert_cmphex(DAT_GET_TYPE(dat_evd_wait(sw, 1000, 1, &out, &nmore)), ==, DAT_TIMEOUT_EXPIRED);
  assert_dat(dat_evd_clear_unwaitable(dto), DAT_SUCCESS);
  g_assert_cmphex(DAT_GET_TYPE(dat_evd_wait(dto, 1000, 1, &out, &nmore)), ==, DAT_TIMEOUT_EXPIRED);

  assert_dat(dat_evd_free(dto), DAT_SUCCESS);
  assert_dat(dat_evd_free(sw), DAT_SUCCESS);
  assert_dat(dat_evd_set_unwaitable(sw), DAT_ERR(DAT_INVALID_HANDLE, 0));
  assert_dat(dat_evd_clear_unwaitable(sw), DAT_ERR(DAT_INVALID_HANDLE, 0));
}

static void
test_evd_resize(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("dat_evd_resize shrinks an EVD's queue and grows it back to its size at creation; "
                 "below the events queued it is DAT_INVALID_STATE and nothing is lost; beyond its "
                 "creation size DAT_INSUFFICIENT_RESOURCES");
  DAT_EVD_HANDLE evd;
  assert_dat(dat_evd_create(f->ia, 4, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &evd), DAT_SUCCESS);
  DAT_EVENT out;
  DAT_COUNT nmore;
  int mark[3];
  for (int i = 0; i < 3; i++)
    post_software_event(evd, &mark[i]);
  DAT_EVD_PARAM param;
  assert_dat(dat_evd_resize(evd, 2), DAT_ERR(DAT_INVALID_STATE, 0));
  assert_dat(dat_evd_query(evd, DAT_EVD_FIELD_EVD_QLEN, &param), DAT_SUCCESS);
  g_assert_cmpint(param.evd_qlen, ==, 4);
  assert_dat(dat_evd_resize(evd, 3), DAT_SUCCESS);
  assert_dat(dat_evd_query(evd, DAT_EVD_FIELD_EVD_QLEN, &param), DAT_SUCCESS);
  g_assert_cmpint(param.evd_qlen, ==, 3);
  /* The new length bounds dat_evd_wait's threshold. */
  assert_dat(dat_evd_wait(evd, 1000, 4, &out, &nmore), DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));
  assert_dat(dat_evd_wait(evd, 1000, 3, &out, &nmore), DAT_SUCCESS);
  g_assert_true(out.event_data.software_event_data.pointer == &mark[0]);
  g_assert_cmpint(nmore, ==, 2);
  assert_dat(dat_evd_dequeue(evd, &out), DAT_SUCCESS);
  g_assert_true(out.event_data.software_event_data.pointer == &mark[1]);
  assert_dat(dat_evd_dequeue(evd, &out), DAT_SUCCESS);
  g_assert_true(out.event_data.software_event_data.pointer == &mark[2]);
  g_assert_cmphex(DAT_GET_TYPE(dat_evd_dequeue(evd, &out)), ==, DAT_QUEUE_EMPTY);

  assert_dat(dat_evd_resize(evd, 1), DAT_SUCCESS);
  assert_dat(dat_evd_resize(evd, 4), DAT_SUCCESS);
  assert_dat(dat_evd_query(evd, DAT_EVD_FIELD_EVD_QLEN, &param), DAT_SUCCESS);
  g_assert_cmpint(param.evd_qlen, ==, 4);
  assert_dat(dat_evd_resize(evd, 5), DAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEVD));
  assert_dat(dat_evd_resize(evd, 0), DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2));
  assert_dat(dat_evd_query(evd, DAT_EVD_FIELD_EVD_QLEN, &param), DAT_SUCCESS);
  g_assert_cmpint(param.evd_qlen, ==, 4);
  assert_dat(dat_evd_free(evd), DAT_SUCCESS);
  assert_dat(dat_evd_resize(evd, 4), DAT_ERR(DAT_INVALID_HANDLE, 0));
}

static void
test_cno_free_waited(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("dat_cno_free of a CNO another thread waits on is refused as in use; a timeout "
                 "near 2^32 us does not wrap to an immediate expiry");
  DAT_CNO_HANDLE cno;
  assert_dat(dat_cno_create(f->ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno), DAT_SUCCESS);
  /* About 71 minutes: timeout + 999 overflows 32 bits. */
  waiter_t w = { .handle = cno, .timeout = DAT_TIMEOUT_INFINITE - 1 };
  GThread *t = g_thread_new("cno-waiter", cno_waiter, &w);
  waiter_settle(&w);
  assert_dat(dat_cno_free(cno), DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_IN_USE));
  DAT_EVD_HANDLE evd;
  assert_dat(dat_evd_create(f->ia, 4, cno, DAT_EVD_SOFTWARE_FLAG, &evd), DAT_SUCCESS);
  post_software_event(evd, NULL);
  g_thread_join(t);
  assert_dat(w.ret, DAT_SUCCESS);
  g_assert_true(w.evd == evd);
  DAT_EVENT out;
  assert_dat(dat_evd_dequeue(evd, &out), DAT_SUCCESS);
  assert_dat(dat_evd_free(evd), DAT_SUCCESS);
  assert_dat(dat_cno_free(cno), DAT_SUCCESS);
}

static void
test_cno_last_evd_freed(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a thread waiting on a CNO returns with no EVD when the CNO's last EVD is freed "
                 "(DAT 2.0 6.3.2.3); a CNO that keeps an EVD keeps its waiter; once an EVD is "
                 "attached again, a wait times out as usual");
  DAT_CNO_HANDLE cno;
  assert_dat(dat_cno_create(f->ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno), DAT_SUCCESS);
  DAT_EVD_HANDLE e1, e2;
  assert_dat(dat_evd_create(f->ia, 4, cno, DAT_EVD_SOFTWARE_FLAG, &e1), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 4, cno, DAT_EVD_SOFTWARE_FLAG, &e2), DAT_SUCCESS);
  waiter_t w = { .handle = cno, .timeout = 30 * 1000 * 1000, .evd = (DAT_EVD_HANDLE) &w };
  GThread *t = g_thread_new("cno-waiter", cno_waiter, &w);
  waiter_settle(&w);
  assert_dat(dat_evd_free(e1), DAT_SUCCESS);
  g_usleep(WAITER_SETTLE_US);
  g_assert_true(w.evd == (DAT_EVD_HANDLE) &w); /* e2 is left: still waiting */
  gint64 t0 = g_get_monotonic_time();
  assert_dat(dat_evd_free(e2), DAT_SUCCESS);
  g_thread_join(t);
  assert_dat(w.ret, DAT_SUCCESS);
  g_assert_true(w.evd == DAT_HANDLE_NULL);
  g_assert_cmpint(g_get_monotonic_time() - t0, <, 10 * 1000 * 1000);

  DAT_EVD_HANDLE e3, found = (DAT_EVD_HANDLE) &w;
  assert_dat(dat_evd_create(f->ia, 4, cno, DAT_EVD_SOFTWARE_FLAG, &e3), DAT_SUCCESS);
  assert_dat(dat_cno_wait(cno, 50 * 1000, &found), DAT_ERR(DAT_TIMEOUT_EXPIRED, 0));
  g_assert_true(found == DAT_HANDLE_NULL);
  assert_dat(dat_evd_free(e3), DAT_SUCCESS);
  assert_dat(dat_cno_free(cno), DAT_SUCCESS);
}

static void
test_ia_close_waited(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("dat_ia_close(ABRUPT) while threads wait in dat_evd_wait and dat_cno_wait on its "
                 "objects wakes them with an error, and frees nothing under them");
  DAT_EVD_HANDLE evd, cevd;
  DAT_CNO_HANDLE cno;
  assert_dat(dat_evd_create(f->ia, 4, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &evd), DAT_SUCCESS);
  assert_dat(dat_cno_create(f->ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 4, cno, DAT_EVD_SOFTWARE_FLAG, &cevd), DAT_SUCCESS);
  /* A queued software event owns a copy, freed with the EVD (LeakSanitizer). */
  post_software_event(cevd, NULL);
  DAT_EVD_HANDLE found;
  assert_dat(dat_cno_wait(cno, 1000000, &found), DAT_SUCCESS);
  waiter_t we = { .handle = evd, .timeout = 30 * 1000 * 1000 };
  waiter_t wc = { .handle = cno, .timeout = 30 * 1000 * 1000 };
  GThread *te = g_thread_new("evd-waiter", evd_waiter, &we);
  GThread *tc = g_thread_new("cno-waiter", cno_waiter, &wc);
  waiter_settle(&we);
  waiter_settle(&wc);
  gint64 start = g_get_monotonic_time();
  assert_dat(dat_ia_close(f->ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  g_thread_join(te);
  g_thread_join(tc);
  g_assert_cmpint(g_get_monotonic_time() - start, <, 10 * G_USEC_PER_SEC);
  g_assert_cmphex(DAT_GET_TYPE(we.ret), !=, DAT_SUCCESS);
  assert_dat(wc.ret, DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_DEAD));
  assert_dat(dat_evd_free(evd), DAT_ERR(DAT_INVALID_HANDLE, 0));
  assert_dat(dat_cno_free(cno), DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO));
  /* For the fixture's close. */
  open_ia(f, NULL);
}

/* A PSP on a qualifier above 0xffff whose port nobody holds: ports are the
 * host's, shared with tests running in parallel, so a fixed one may be
 * taken.  Starts at a random one of the 32001 ports DAPL's mapping covers. */
static DAT_CONN_QUAL
psp_create_wide(DAT_IA_HANDLE ia, DAT_EVD_HANDLE evd, DAT_PSP_HANDLE *psp)
{
  DAT_CONN_QUAL q = 184527646 + (DAT_CONN_QUAL) g_random_int_range(0, 32001 - 128);
  for (int i = 0; i < 64; i++, q++) {
    DAT_RETURN ret = dat_psp_create(ia, q, evd, DAT_PSP_CONSUMER_FLAG, psp);
    if (ret == DAT_SUCCESS)
      return q;
    g_assert_cmphex(DAT_GET_TYPE(ret), ==, DAT_CONN_QUAL_IN_USE);
  }
  g_error("no free port among 64 qualifiers from %" G_GUINT64_FORMAT, (guint64) (q - 64));
}

static void
test_service_points(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("PSPs on wide and chosen qualifiers, an RSP with its EP; a qualifier above 0xffff "
                 "takes DAPL's port for it");
  DAT_EVD_HANDLE cr_evd, dto, conn;
  assert_dat(dat_evd_create(f->ia, 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 4, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 4, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn), DAT_SUCCESS);
  /* DAPL's rdma_cm provider listens on port q % 32001 + 33534 for a
   * qualifier q above 0xffff (dapltest's is 184527646). */
  DAT_PSP_HANDLE psp, psp2, any;
  const DAT_CONN_QUAL wide = psp_create_wide(f->ia, cr_evd, &psp);
  const DAT_CONN_QUAL port = wide % 32001 + 33534;
  DAT_RETURN ret = dat_psp_create(f->ia, port, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp2);
  g_assert_cmphex(DAT_GET_TYPE(ret), ==, DAT_CONN_QUAL_IN_USE);
  DAT_PSP_PARAM pp;
  assert_dat(dat_psp_query(psp, DAT_PSP_FIELD_ALL, &pp), DAT_SUCCESS);
  g_assert_cmpuint(pp.conn_qual, ==, wide);
  DAT_CONN_QUAL chosen = 0;
  assert_dat(dat_psp_create_any(f->ia, &chosen, cr_evd, DAT_PSP_CONSUMER_FLAG, &any), DAT_SUCCESS);
  g_assert_cmpuint(chosen, >, 0);
  g_assert_cmpuint(chosen, <=, 0xffff);

  DAT_EP_HANDLE ep;
  assert_dat(dat_ep_create(f->ia, f->pz, dto, dto, conn, NULL, &ep), DAT_SUCCESS);
  DAT_RSP_HANDLE rsp;
  DAT_CONN_QUAL rq = wide + 1;
  DAT_RETURN rret;
  while ((rret = dat_rsp_create(f->ia, rq, ep, cr_evd, &rsp)) != DAT_SUCCESS && rq < wide + 64) {
    g_assert_cmphex(DAT_GET_TYPE(rret), ==, DAT_CONN_QUAL_IN_USE);
    rq++;
  }
  assert_dat(rret, DAT_SUCCESS);
  DAT_RSP_PARAM rp;
  assert_dat(dat_rsp_query(rsp, DAT_RSP_FIELD_ALL, &rp), DAT_SUCCESS);
  g_assert_true(rp.ep_handle == ep);
  g_assert_cmpuint(rp.conn_qual, ==, rq);
  DAT_HANDLE_TYPE type;
  assert_dat(dat_get_handle_type(rsp, &type), DAT_SUCCESS);
  g_assert_cmpint(type, ==, DAT_HANDLE_TYPE_RSP);
  assert_dat(dat_psp_free(rsp), DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PSP));
  assert_dat(dat_rsp_free(rsp), DAT_SUCCESS);
  assert_dat(dat_rsp_free(rsp), DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RSP));
  assert_dat(dat_psp_free(any), DAT_SUCCESS);
  assert_dat(dat_psp_free(psp), DAT_SUCCESS);
  assert_dat(dat_ep_free(ep), DAT_SUCCESS);
  assert_dat(dat_evd_free(cr_evd), DAT_SUCCESS);
  assert_dat(dat_evd_free(dto), DAT_SUCCESS);
  assert_dat(dat_evd_free(conn), DAT_SUCCESS);
}

/* The next event on @p evd within 5 s, of number @p want. */
/* The next event of @p evd, within 10 s. */
static void
wait_event(DAT_EVD_HANDLE evd, DAT_EVENT *ev)
{
  DAT_COUNT nmore;
  assert_dat(dat_evd_wait(evd, 10 * 1000 * 1000, 1, ev, &nmore), DAT_SUCCESS);
}

/* The next event of @p evd, which must be @p want. */
static void
wait_event_of(DAT_EVD_HANDLE evd, DAT_EVENT_NUMBER want, DAT_EVENT *event)
{
  wait_event(evd, event);
  g_assert_cmphex(event->event_number, ==, want);
}

static void
test_rsp_request(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a request to an RSP names it in its CR event; the RSP serves that one request "
                 "and stays until dat_rsp_free, as DAPL's does (dapltest -r frees it after "
                 "accepting)");
  DAT_EVD_HANDLE cr_evd, dto, sconn, cconn;
  assert_dat(dat_evd_create(f->ia, 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 4, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &sconn), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 4, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &cconn), DAT_SUCCESS);
  DAT_EP_HANDLE sep, cep, cep2;
  assert_dat(dat_ep_create(f->ia, f->pz, dto, dto, sconn, NULL, &sep), DAT_SUCCESS);
  assert_dat(dat_ep_create(f->ia, f->pz, dto, dto, cconn, NULL, &cep), DAT_SUCCESS);
  assert_dat(dat_ep_create(f->ia, f->pz, dto, dto, cconn, NULL, &cep2), DAT_SUCCESS);
  DAT_RSP_HANDLE rsp;
  DAT_CONN_QUAL q = (DAT_CONN_QUAL) g_random_int_range(20000, 40000);
  DAT_RETURN ret;
  while ((ret = dat_rsp_create(f->ia, q, sep, cr_evd, &rsp)) != DAT_SUCCESS) {
    g_assert_cmphex(DAT_GET_TYPE(ret), ==, DAT_CONN_QUAL_IN_USE);
    q++;
  }
  DAT_IA_ATTR attr;
  assert_dat(dat_ia_query(f->ia, NULL, DAT_IA_FIELD_IA_ADDRESS_PTR, &attr, 0, NULL), DAT_SUCCESS);
  assert_dat(dat_ep_connect(cep, attr.ia_address_ptr, q, DAT_TIMEOUT_INFINITE, 0, NULL,
                            DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
             DAT_SUCCESS);
  DAT_EVENT ev;
  wait_event_of(cr_evd, DAT_CONNECTION_REQUEST_EVENT, &ev);
  const DAT_CR_ARRIVAL_EVENT_DATA *cr = &ev.event_data.cr_arrival_event_data;
  g_assert_true(cr->sp_handle.rsp_handle == rsp);
  g_assert_cmpuint(cr->conn_qual, ==, q);
  DAT_CR_PARAM cp;
  assert_dat(dat_cr_query(cr->cr_handle, DAT_CR_FIELD_LOCAL_EP_HANDLE, &cp), DAT_SUCCESS);
  g_assert_true(cp.local_ep_handle == sep);
  assert_dat(dat_cr_accept(cr->cr_handle, DAT_HANDLE_NULL, 0, NULL), DAT_SUCCESS);
  wait_event_of(sconn, DAT_CONNECTION_EVENT_ESTABLISHED, &ev);
  wait_event_of(cconn, DAT_CONNECTION_EVENT_ESTABLISHED, &ev);
  /* Used, the RSP listens no more: a second request finds no one (tried
   * again for the connect's 1 s, then refused). */
  assert_dat(dat_ep_connect(cep2, attr.ia_address_ptr, q, 1000 * 1000, 0, NULL,
                            DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
             DAT_SUCCESS);
  DAT_COUNT nmore;
  /* The request is turned down when the CR EVD is read: no event. */
  g_assert_cmphex(DAT_GET_TYPE(dat_evd_wait(cr_evd, 1000000, 1, &ev, &nmore)), ==,
                  DAT_TIMEOUT_EXPIRED);
  assert_dat(dat_evd_wait(cconn, 5000000, 1, &ev, &nmore), DAT_SUCCESS);
  g_assert_true(ev.event_number == DAT_CONNECTION_EVENT_NON_PEER_REJECTED ||
                ev.event_number == DAT_CONNECTION_EVENT_PEER_REJECTED ||
                ev.event_number == DAT_CONNECTION_EVENT_UNREACHABLE);
  assert_dat(dat_rsp_free(rsp), DAT_SUCCESS);
  assert_dat(dat_rsp_free(rsp), DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RSP));
  assert_dat(dat_ep_disconnect(cep, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  wait_event_of(cconn, DAT_CONNECTION_EVENT_DISCONNECTED, &ev);
  wait_event_of(sconn, DAT_CONNECTION_EVENT_DISCONNECTED, &ev);
  /* The fixture's abrupt close frees the rest. */
}

static void
test_cr_handoff(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("dat_cr_handoff moves a request to another PSP of the IA: a new CR event on that "
                 "PSP's EVD, with its qualifier and the requester's private data; the old CR is "
                 "refused; a qualifier nobody else serves is DAT_INVALID_PARAMETER and keeps the CR");
  DAT_EVD_HANDLE cr_a, cr_b, dto, sconn, cconn;
  assert_dat(dat_evd_create(f->ia, 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_a), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_b), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 4, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &sconn), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 4, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &cconn), DAT_SUCCESS);
  DAT_EP_HANDLE sep, cep;
  assert_dat(dat_ep_create(f->ia, f->pz, dto, dto, sconn, NULL, &sep), DAT_SUCCESS);
  assert_dat(dat_ep_create(f->ia, f->pz, dto, dto, cconn, NULL, &cep), DAT_SUCCESS);
  DAT_PSP_HANDLE psp_a, psp_b, psp_gone;
  DAT_CONN_QUAL qa = 0, qgone = 0;
  assert_dat(dat_psp_create_any(f->ia, &qa, cr_a, DAT_PSP_CONSUMER_FLAG, &psp_a), DAT_SUCCESS);
  const DAT_CONN_QUAL qb = psp_create_wide(f->ia, cr_b, &psp_b);
  /* A qualifier nobody listens on any more. */
  assert_dat(dat_psp_create_any(f->ia, &qgone, cr_b, DAT_PSP_CONSUMER_FLAG, &psp_gone), DAT_SUCCESS);
  assert_dat(dat_psp_free(psp_gone), DAT_SUCCESS);

  DAT_IA_ATTR attr;
  assert_dat(dat_ia_query(f->ia, NULL, DAT_IA_FIELD_IA_ADDRESS_PTR, &attr, 0, NULL), DAT_SUCCESS);
  char hello[] = "handed off";
  assert_dat(dat_ep_connect(cep, attr.ia_address_ptr, qa, DAT_TIMEOUT_INFINITE, sizeof(hello),
                            hello, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
             DAT_SUCCESS);
  DAT_EVENT ev;
  wait_event_of(cr_a, DAT_CONNECTION_REQUEST_EVENT, &ev);
  DAT_CR_HANDLE old = ev.event_data.cr_arrival_event_data.cr_handle;
  g_assert_true(ev.event_data.cr_arrival_event_data.sp_handle.psp_handle == psp_a);
  assert_dat(dat_cr_handoff(old, qgone), DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2));
  assert_dat(dat_cr_handoff(old, qa), DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2));
  DAT_CR_PARAM cp;
  assert_dat(dat_cr_query(old, DAT_CR_FIELD_ALL, &cp), DAT_SUCCESS);

  assert_dat(dat_cr_handoff(old, qb), DAT_SUCCESS);
  const DAT_RETURN stale = DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CR);
  assert_dat(dat_cr_query(old, DAT_CR_FIELD_ALL, &cp), stale);
  assert_dat(dat_cr_accept(old, sep, 0, NULL), stale);
  assert_dat(dat_cr_reject(old, 0, NULL), stale);
  assert_dat(dat_cr_handoff(old, qb), stale);
  DAT_COUNT nmore;
  g_assert_cmphex(DAT_GET_TYPE(dat_evd_wait(cr_a, 100000, 1, &ev, &nmore)), ==, DAT_TIMEOUT_EXPIRED);

  wait_event_of(cr_b, DAT_CONNECTION_REQUEST_EVENT, &ev);
  const DAT_CR_ARRIVAL_EVENT_DATA *cr = &ev.event_data.cr_arrival_event_data;
  g_assert_true(cr->sp_handle.psp_handle == psp_b);
  g_assert_cmpuint(cr->conn_qual, ==, qb);
  g_assert_true(cr->cr_handle != old);
  assert_dat(dat_cr_query(cr->cr_handle, DAT_CR_FIELD_ALL, &cp), DAT_SUCCESS);
  g_assert_cmpint(cp.private_data_size, >=, (DAT_COUNT) sizeof(hello));
  g_assert_cmpmem(cp.private_data, sizeof(hello), hello, sizeof(hello));
  assert_dat(dat_cr_accept(cr->cr_handle, sep, 0, NULL), DAT_SUCCESS);
  wait_event_of(sconn, DAT_CONNECTION_EVENT_ESTABLISHED, &ev);
  wait_event_of(cconn, DAT_CONNECTION_EVENT_ESTABLISHED, &ev);
  assert_dat(dat_ep_disconnect(cep, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  wait_event_of(cconn, DAT_CONNECTION_EVENT_DISCONNECTED, &ev);
  wait_event_of(sconn, DAT_CONNECTION_EVENT_DISCONNECTED, &ev);
  /* The fixture's abrupt close frees the rest. */
}

#define SRQ_STALE DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ)

static void
test_srq_stale(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a freed SRQ's handle is refused by every SRQ call and by "
                 "dat_ep_create_with_srq, and is not handed out again");
  DAT_PROVIDER_ATTR pr_attr;
  DAT_IA_ATTR ia_attr;
  assert_dat(dat_ia_query(f->ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, DAT_PROVIDER_FIELD_ALL, &pr_attr),
             DAT_SUCCESS);
  g_assert_cmpint(pr_attr.srq_supported, ==, DAT_TRUE);
  g_assert_cmpint(ia_attr.max_srqs, >, 0);
  g_assert_cmpint(ia_attr.max_recv_per_srq, >=, 8);
  gboolean mtu = FALSE;
  for (int i = 0; i < pr_attr.num_provider_specific_attr; i++)
    if (strcmp(pr_attr.provider_specific_attr[i].name, "DAT_IB_TRANSPORT_MTU") == 0) {
      int v = atoi(pr_attr.provider_specific_attr[i].value);
      g_assert_true(v == 256 || v == 512 || v == 1024 || v == 2048 || v == 4096);
      mtu = TRUE;
    }
  g_assert_true(mtu);

  DAT_SRQ_ATTR sa = { .max_recv_dtos = 8, .max_recv_iov = 1, .low_watermark = DAT_SRQ_LW_DEFAULT };
  DAT_SRQ_HANDLE srq, srq2;
  assert_dat(dat_srq_create(f->ia, f->pz, &sa, &srq), DAT_SUCCESS);
  DAT_HANDLE_TYPE type;
  assert_dat(dat_get_handle_type(srq, &type), DAT_SUCCESS);
  g_assert_cmpint(type, ==, DAT_HANDLE_TYPE_SRQ);
  DAT_SRQ_PARAM sp;
  assert_dat(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &sp), DAT_SUCCESS);
  g_assert_true(sp.pz_handle == f->pz);
  g_assert_cmpint(sp.max_recv_dtos, >=, 8);
  g_assert_cmpint(sp.max_recv_iov, >=, 1);
  g_assert_cmpint(sp.low_watermark, ==, 0);
  assert_dat(dat_srq_set_lw(srq, sp.max_recv_dtos + 1), DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2));
  assert_dat(dat_srq_set_lw(srq, 2), DAT_SUCCESS);
  assert_dat(dat_srq_resize(srq, 1), DAT_ERR(DAT_INVALID_STATE, 0)); /* below the watermark */
  assert_dat(dat_srq_resize(srq, 16), DAT_SUCCESS);
  assert_dat(dat_srq_query(srq, DAT_SRQ_FIELD_MAX_RECV_DTO, &sp), DAT_SUCCESS);
  g_assert_cmpint(sp.max_recv_dtos, >=, 16);
  /* An SRQ holds its zone. */
  assert_dat(dat_pz_free(f->pz), DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_PZ_IN_USE));

  assert_dat(dat_srq_free(srq), DAT_SUCCESS);
  assert_dat(dat_srq_free(srq), SRQ_STALE);
  assert_dat(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &sp), SRQ_STALE);
  assert_dat(dat_srq_resize(srq, 4), SRQ_STALE);
  assert_dat(dat_srq_set_lw(srq, 1), SRQ_STALE);
  DAT_DTO_COOKIE cookie = { .as_64 = 1 };
  assert_dat(dat_srq_post_recv(srq, 0, NULL, cookie), SRQ_STALE);
  g_assert_cmphex(DAT_GET_TYPE(dat_get_handle_type(srq, &type)), ==, DAT_INVALID_HANDLE);
  DAT_EP_ATTR ea = { .service_type = DAT_SERVICE_TYPE_RC, .max_request_dtos = 4,
                     .max_recv_dtos = 4, .max_request_iov = 1, .max_recv_iov = 1 };
  DAT_EP_HANDLE ep;
  assert_dat(dat_ep_create_with_srq(f->ia, f->pz, DAT_HANDLE_NULL, DAT_HANDLE_NULL, DAT_HANDLE_NULL,
                                    srq, &ea, &ep), SRQ_STALE);
  /* An SRQ's handle is not one of another type either. */
  assert_dat(dat_srq_free(f->pz), SRQ_STALE);
  for (int i = 0; i < 16; i++) {
    assert_dat(dat_srq_create(f->ia, f->pz, &sa, &srq2), DAT_SUCCESS);
    g_assert_true(srq2 != srq);
    assert_dat(dat_srq_free(srq2), DAT_SUCCESS);
  }
  sa.max_recv_dtos = 0;
  assert_dat(dat_srq_create(f->ia, f->pz, &sa, &srq2), DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));
}

static void
test_srq_in_use(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an SRQ an EP receives through refuses to be freed; the EP names it and takes "
                 "no receive of its own");
  DAT_SRQ_ATTR sa = { .max_recv_dtos = 8, .max_recv_iov = 1 };
  DAT_SRQ_HANDLE srq;
  assert_dat(dat_srq_create(f->ia, f->pz, &sa, &srq), DAT_SUCCESS);
  DAT_EVD_HANDLE dto, conn;
  assert_dat(dat_evd_create(f->ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn), DAT_SUCCESS);
  DAT_EP_ATTR ea = { .service_type = DAT_SERVICE_TYPE_RC, .max_request_dtos = 4,
                     .max_recv_dtos = 4, .max_request_iov = 1, .max_recv_iov = 1 };
  DAT_EP_HANDLE ep, ep2;
  assert_dat(dat_ep_create_with_srq(f->ia, f->pz, dto, dto, conn, srq, NULL, &ep),
             DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG7));
  DAT_PZ_HANDLE pz2;
  assert_dat(dat_pz_create(f->ia, &pz2), DAT_SUCCESS);
  assert_dat(dat_ep_create_with_srq(f->ia, pz2, dto, dto, conn, srq, &ea, &ep),
             DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2));
  assert_dat(dat_pz_free(pz2), DAT_SUCCESS);
  assert_dat(dat_ep_create_with_srq(f->ia, f->pz, dto, dto, conn, srq, &ea, &ep), DAT_SUCCESS);
  assert_dat(dat_ep_create_with_srq(f->ia, f->pz, dto, dto, conn, srq, &ea, &ep2), DAT_SUCCESS);
  DAT_EP_PARAM ep_param;
  assert_dat(dat_ep_query(ep, DAT_EP_FIELD_SRQ_HANDLE, &ep_param), DAT_SUCCESS);
  g_assert_true(ep_param.srq_handle == srq);
  assert_dat(dat_srq_free(srq), DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE));
  static char buf[64];
  DAT_REGION_DESCRIPTION region = { .for_va = buf };
  DAT_LMR_HANDLE lmr;
  DAT_LMR_CONTEXT lctx;
  DAT_RMR_CONTEXT rctx;
  DAT_VLEN len;
  DAT_VADDR addr;
  assert_dat(dat_lmr_create(f->ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(buf), f->pz,
                            DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr, &lctx, &rctx, &len, &addr),
             DAT_SUCCESS);
  DAT_LMR_TRIPLET iov = { .virtual_address = (DAT_VADDR) (uintptr_t) buf,
                          .segment_length = sizeof(buf), .lmr_context = lctx };
  DAT_DTO_COOKIE cookie = { .as_64 = 7 };
  assert_dat(dat_ep_post_recv(ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG),
             DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1));
  assert_dat(dat_srq_post_recv(srq, 1, &iov, cookie), DAT_SUCCESS);
  assert_dat(dat_ep_free(ep), DAT_SUCCESS);
  assert_dat(dat_srq_free(srq), DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE));
  assert_dat(dat_ep_free(ep2), DAT_SUCCESS);
  assert_dat(dat_srq_free(srq), DAT_SUCCESS);
  assert_dat(dat_lmr_free(lmr), DAT_SUCCESS);
  assert_dat(dat_evd_free(dto), DAT_SUCCESS);
  assert_dat(dat_evd_free(conn), DAT_SUCCESS);
}

/* A server EP and a client EP of one IA, their EVDs and the server's PSP. */
typedef struct {
  DAT_EVD_HANDLE cr_evd, s_dto, s_conn, c_dto, c_conn;
  DAT_EP_HANDLE s_ep, c_ep;
  DAT_PSP_HANDLE psp;
} pair_t;

/* The EVDs of @p p: a CR EVD of 4 events, and a DTO and a connection EVD
 * of 8 for each side; the server's DTO EVD takes @p s_dto_flags too. */
static void
pair_evds_create(fixture_t *f, DAT_EVD_FLAGS s_dto_flags, pair_t *p)
{
  assert_dat(dat_evd_create(f->ia, 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &p->cr_evd), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG | s_dto_flags, &p->s_dto),
             DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &p->s_conn),
             DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &p->c_dto), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &p->c_conn),
             DAT_SUCCESS);
}

static void
test_srq_recv(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a Send lands in a receive posted to the SRQ and completes on the receiving EP's "
                 "EVD, naming that EP; the low watermark and the EP's disconnection are reported "
                 "on the async EVD");
  DAT_IA_ATTR ia_attr;
  assert_dat(dat_ia_query(f->ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, 0, NULL), DAT_SUCCESS);
  DAT_SRQ_ATTR sa = { .max_recv_dtos = 4, .max_recv_iov = 1 };
  DAT_SRQ_HANDLE srq;
  assert_dat(dat_srq_create(f->ia, f->pz, &sa, &srq), DAT_SUCCESS);
  pair_t p;
  pair_evds_create(f, 0, &p);
  DAT_EP_ATTR ea = { .service_type = DAT_SERVICE_TYPE_RC, .max_message_size = 4096,
                     .max_request_dtos = 4, .max_recv_dtos = 4, .max_request_iov = 1,
                     .max_recv_iov = 1 };
  assert_dat(dat_ep_create_with_srq(f->ia, f->pz, p.s_dto, p.s_dto, p.s_conn, srq, &ea, &p.s_ep),
             DAT_SUCCESS);
  assert_dat(dat_ep_create(f->ia, f->pz, p.c_dto, p.c_dto, p.c_conn, &ea, &p.c_ep), DAT_SUCCESS);

  static char rbuf[2][256], sbuf[256];
  DAT_REGION_DESCRIPTION rreg = { .for_va = rbuf }, sreg = { .for_va = sbuf };
  DAT_LMR_HANDLE rlmr, slmr;
  DAT_LMR_CONTEXT rctx, sctx;
  DAT_RMR_CONTEXT rmr;
  DAT_VLEN len;
  DAT_VADDR addr;
  assert_dat(dat_lmr_create(f->ia, DAT_MEM_TYPE_VIRTUAL, rreg, sizeof(rbuf), f->pz,
                            DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &rlmr, &rctx, &rmr, &len, &addr),
             DAT_SUCCESS);
  assert_dat(dat_lmr_create(f->ia, DAT_MEM_TYPE_VIRTUAL, sreg, sizeof(sbuf), f->pz,
                            DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &slmr, &sctx, &rmr, &len, &addr),
             DAT_SUCCESS);
  for (int i = 0; i < 2; i++) {
    DAT_LMR_TRIPLET iov = { .virtual_address = (DAT_VADDR) (uintptr_t) rbuf[i],
                            .segment_length = sizeof(rbuf[i]), .lmr_context = rctx };
    DAT_DTO_COOKIE cookie = { .as_64 = 100 + (DAT_UINT64) i };
    assert_dat(dat_srq_post_recv(srq, 1, &iov, cookie), DAT_SUCCESS);
  }

  DAT_CONN_QUAL qual = 0;
  assert_dat(dat_psp_create_any(f->ia, &qual, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &p.psp), DAT_SUCCESS);
  assert_dat(dat_ep_connect(p.c_ep, ia_attr.ia_address_ptr, qual, 10 * 1000 * 1000, 0, NULL,
                            DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG), DAT_SUCCESS);
  DAT_EVENT ev;
  wait_event(p.cr_evd, &ev);
  g_assert_cmphex(ev.event_number, ==, DAT_CONNECTION_REQUEST_EVENT);
  assert_dat(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, p.s_ep, 0, NULL), DAT_SUCCESS);
  wait_event(p.s_conn, &ev);
  g_assert_cmphex(ev.event_number, ==, DAT_CONNECTION_EVENT_ESTABLISHED);
  wait_event(p.c_conn, &ev);
  g_assert_cmphex(ev.event_number, ==, DAT_CONNECTION_EVENT_ESTABLISHED);

  /* Armed at 2 with 2 receives held: the Send's receive brings it under. */
  assert_dat(dat_srq_set_lw(srq, 2), DAT_SUCCESS);
  memset(sbuf, 0x5a, sizeof(sbuf));
  DAT_LMR_TRIPLET siov = { .virtual_address = (DAT_VADDR) (uintptr_t) sbuf, .segment_length = 200,
                           .lmr_context = sctx };
  DAT_DTO_COOKIE scookie = { .as_64 = 1 };
  assert_dat(dat_ep_post_send(p.c_ep, 1, &siov, scookie, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  wait_event(p.c_dto, &ev);
  g_assert_cmphex(ev.event_number, ==, DAT_DTO_COMPLETION_EVENT);
  g_assert_cmpint(ev.event_data.dto_completion_event_data.status, ==, DAT_DTO_SUCCESS);
  wait_event(p.s_dto, &ev);
  const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
  g_assert_cmphex(ev.event_number, ==, DAT_DTO_COMPLETION_EVENT);
  g_assert_cmpint(d->status, ==, DAT_DTO_SUCCESS);
  g_assert_cmpint(d->operation, ==, DAT_DTO_RECEIVE);
  g_assert_true(d->ep_handle == p.s_ep);
  g_assert_cmpuint(d->transfered_length, ==, 200);
  g_assert_true(d->user_cookie.as_64 == 100 || d->user_cookie.as_64 == 101);
  const char *got = rbuf[d->user_cookie.as_64 - 100];
  for (int i = 0; i < 200; i++)
    g_assert_cmpint((unsigned char) got[i], ==, 0x5a);
  wait_event(f->async, &ev);
  g_assert_cmphex(ev.event_number, ==, DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR);
  g_assert_true(ev.event_data.asynch_error_event_data.dat_handle == srq);
  g_assert_cmpint(ev.event_data.asynch_error_event_data.reason, ==, DAT_SRQ_LOW_WATERMARK_EVENT);
  DAT_SRQ_PARAM sp;
  assert_dat(dat_srq_query(srq, DAT_SRQ_FIELD_LOW_WATERMARK, &sp), DAT_SUCCESS);
  g_assert_cmpint(sp.low_watermark, ==, 0); /* fired: disarmed */
  /* The SRQ serves an EP: it stays. */
  assert_dat(dat_srq_free(srq), DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE));

  assert_dat(dat_ep_disconnect(p.c_ep, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
  wait_event(p.s_conn, &ev);
  g_assert_cmphex(ev.event_number, ==, DAT_CONNECTION_EVENT_DISCONNECTED);
  /* As DAPL reports InfiniBand's Last WQE Reached (dtestsrq waits for it). */
  wait_event(f->async, &ev);
  g_assert_cmphex(ev.event_number, ==, DAT_ASYNC_ERROR_EP_BROKEN);
  g_assert_true(ev.event_data.asynch_error_event_data.dat_handle == p.s_ep);
  wait_event(p.c_conn, &ev);
  g_assert_cmphex(ev.event_number, ==, DAT_CONNECTION_EVENT_DISCONNECTED);

  assert_dat(dat_psp_free(p.psp), DAT_SUCCESS);
  assert_dat(dat_ep_free(p.s_ep), DAT_SUCCESS);
  assert_dat(dat_ep_free(p.c_ep), DAT_SUCCESS);
  assert_dat(dat_srq_free(srq), DAT_SUCCESS);
  assert_dat(dat_lmr_free(rlmr), DAT_SUCCESS);
  assert_dat(dat_lmr_free(slmr), DAT_SUCCESS);
}

static void
pair_connect(fixture_t *f, pair_t *p)
{
  DAT_IA_ATTR ia_attr;
  assert_dat(dat_ia_query(f->ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, 0, NULL), DAT_SUCCESS);
  pair_evds_create(f, DAT_EVD_RMR_BIND_FLAG, p);
  DAT_EP_ATTR ea = { .service_type = DAT_SERVICE_TYPE_RC, .max_message_size = 4096,
                     .max_rdma_size = 4096, .max_request_dtos = 8, .max_recv_dtos = 4,
                     .max_request_iov = 1, .max_recv_iov = 1, .max_rdma_read_in = 2,
                     .max_rdma_read_out = 2, .max_rdma_read_iov = 1, .max_rdma_write_iov = 1 };
  assert_dat(dat_ep_create(f->ia, f->pz, p->s_dto, p->s_dto, p->s_conn, &ea, &p->s_ep), DAT_SUCCESS);
  assert_dat(dat_ep_create(f->ia, f->pz, p->c_dto, p->c_dto, p->c_conn, &ea, &p->c_ep), DAT_SUCCESS);
  DAT_CONN_QUAL qual = 0;
  assert_dat(dat_psp_create_any(f->ia, &qual, p->cr_evd, DAT_PSP_CONSUMER_FLAG, &p->psp),
             DAT_SUCCESS);
  assert_dat(dat_ep_connect(p->c_ep, ia_attr.ia_address_ptr, qual, 10 * 1000 * 1000, 0, NULL,
                            DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG), DAT_SUCCESS);
  DAT_EVENT ev;
  wait_event(p->cr_evd, &ev);
  g_assert_cmphex(ev.event_number, ==, DAT_CONNECTION_REQUEST_EVENT);
  assert_dat(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, p->s_ep, 0, NULL),
             DAT_SUCCESS);
  wait_event(p->s_conn, &ev);
  g_assert_cmphex(ev.event_number, ==, DAT_CONNECTION_EVENT_ESTABLISHED);
  wait_event(p->c_conn, &ev);
  g_assert_cmphex(ev.event_number, ==, DAT_CONNECTION_EVENT_ESTABLISHED);
}

static void
test_disconnect_states(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("dat_ep_disconnect in each state, as DAT 2.0 and DAPL give it: unknown flags "
                 "are DAT_INVALID_PARAMETER; an EP never connected is DAT_INVALID_STATE; a "
                 "connect still pending is abandoned and its connection EVD gets "
                 "DISCONNECTED; a connected EP disconnects once, and again is a no-op");
  pair_t p;
  pair_connect(f, &p);
  DAT_EVENT ev;
  assert_dat(dat_ep_disconnect(p.c_ep, 0x55), DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2));
  assert_dat(dat_ep_disconnect(p.c_ep, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
  wait_event_of(p.c_conn, DAT_CONNECTION_EVENT_DISCONNECTED, &ev);
  g_assert_true(ev.event_data.connect_event_data.ep_handle == p.c_ep);
  wait_event_of(p.s_conn, DAT_CONNECTION_EVENT_DISCONNECTED, &ev);
  assert_dat(dat_ep_disconnect(p.c_ep, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  assert_dat(dat_ep_disconnect(p.s_ep, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
  assert_dat(dat_evd_dequeue(p.c_conn, &ev), DAT_QUEUE_EMPTY);
  assert_dat(dat_evd_dequeue(p.s_conn, &ev), DAT_QUEUE_EMPTY);

  /* Never connected. */
  DAT_EP_HANDLE x_ep;
  assert_dat(dat_ep_create(f->ia, f->pz, p.c_dto, p.c_dto, p.c_conn, NULL, &x_ep), DAT_SUCCESS);
  assert_dat(dat_ep_disconnect(x_ep, DAT_CLOSE_ABRUPT_FLAG),
             DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED));

  /* Pending: the request reaches the PSP and is never accepted. */
  DAT_IA_ATTR ia_attr;
  assert_dat(dat_ia_query(f->ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, 0, NULL), DAT_SUCCESS);
  DAT_PSP_PARAM pp;
  assert_dat(dat_psp_query(p.psp, DAT_PSP_FIELD_ALL, &pp), DAT_SUCCESS);
  assert_dat(dat_ep_connect(x_ep, ia_attr.ia_address_ptr, pp.conn_qual, 10 * 1000 * 1000, 0, NULL,
                            DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG), DAT_SUCCESS);
  wait_event_of(p.cr_evd, DAT_CONNECTION_REQUEST_EVENT, &ev);
  DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
  assert_dat(dat_ep_disconnect(x_ep, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  wait_event(p.c_conn, &ev);
  g_assert_cmphex(ev.event_number, ==, DAT_CONNECTION_EVENT_DISCONNECTED);
  g_assert_true(ev.event_data.connect_event_data.ep_handle == x_ep);
  DAT_EP_PARAM ep_param;
  assert_dat(dat_ep_query(x_ep, DAT_EP_FIELD_EP_STATE, &ep_param), DAT_SUCCESS);
  g_assert_cmpint(ep_param.ep_state, ==, DAT_EP_STATE_DISCONNECTED);
  assert_dat(dat_cr_reject(cr, 0, NULL), DAT_SUCCESS);
  assert_dat(dat_evd_dequeue(p.c_conn, &ev), DAT_QUEUE_EMPTY);

  assert_dat(dat_ep_free(x_ep), DAT_SUCCESS);
  assert_dat(dat_psp_free(p.psp), DAT_SUCCESS);
  assert_dat(dat_ep_free(p.s_ep), DAT_SUCCESS);
  assert_dat(dat_ep_free(p.c_ep), DAT_SUCCESS);
}

/* A registered buffer: its LMR, its triplet. */
typedef struct {
  DAT_LMR_HANDLE lmr;
  DAT_LMR_TRIPLET iov;
} reg_t;

static void
reg_make(fixture_t *f, void *buf, DAT_VLEN len, reg_t *r)
{
  DAT_REGION_DESCRIPTION region = { .for_va = buf };
  DAT_LMR_CONTEXT lctx;
  DAT_RMR_CONTEXT rctx;
  DAT_VLEN rlen;
  DAT_VADDR addr;
  assert_dat(dat_lmr_create(f->ia, DAT_MEM_TYPE_VIRTUAL, region, len, f->pz, DAT_MEM_PRIV_ALL_FLAG,
                            DAT_VA_TYPE_VA, &r->lmr, &lctx, &rctx, &rlen, &addr), DAT_SUCCESS);
  r->iov = (DAT_LMR_TRIPLET) { .virtual_address = (DAT_VADDR) (uintptr_t) buf,
                               .segment_length = (DAT_VLEN) len, .lmr_context = lctx };
}

/* An RMR for @p ep: for the zone where the interface has wide ones, else narrow. */
static void
rmr_make(fixture_t *f, DAT_RMR_HANDLE *rmr, DAT_RMR_SCOPE *scope)
{
  DAT_RETURN ret = dat_rmr_create(f->pz, rmr);
  *scope = DAT_RMR_SCOPE_PZ;
  if (DAT_GET_TYPE(ret) == DAT_MODEL_NOT_SUPPORTED) {
    ret = prov_of(f->pz)->rmr_create_for_ep_func(f->pz, rmr);
    *scope = DAT_RMR_SCOPE_EP;
  }
  assert_dat(ret, DAT_SUCCESS);
}

/* Binds (or, with a zero-length @p iov, unbinds) @p rmr through @p ep and
 * waits for the bind completion. */
static DAT_RMR_CONTEXT
rmr_bind_wait(DAT_RMR_HANDLE rmr, DAT_LMR_HANDLE lmr, const DAT_LMR_TRIPLET *iov, DAT_EP_HANDLE ep,
              DAT_EVD_HANDLE dto, DAT_UINT64 cookie)
{
  DAT_RMR_CONTEXT ctx = 0;
  DAT_RMR_COOKIE rc = { .as_64 = cookie };
  assert_dat(dat_rmr_bind(rmr, lmr, iov, DAT_MEM_PRIV_REMOTE_READ_FLAG |
                          DAT_MEM_PRIV_REMOTE_WRITE_FLAG, DAT_VA_TYPE_VA, ep, rc,
                          DAT_COMPLETION_DEFAULT_FLAG, &ctx), DAT_SUCCESS);
  DAT_EVENT ev;
  wait_event(dto, &ev);
  g_assert_cmphex(ev.event_number, ==, DAT_RMR_BIND_COMPLETION_EVENT);
  g_assert_true(ev.event_data.rmr_completion_event_data.rmr_handle == rmr);
  g_assert_cmpuint(ev.event_data.rmr_completion_event_data.user_cookie.as_64, ==, cookie);
  g_assert_cmpint(ev.event_data.rmr_completion_event_data.status, ==, DAT_RMR_BIND_SUCCESS);
  return ctx;
}

/* Posts an RDMA Write of @p src to @p ctx at @p addr and returns its completion status. */
static DAT_DTO_COMPLETION_STATUS
write_status(DAT_EP_HANDLE ep, DAT_EVD_HANDLE dto, DAT_LMR_TRIPLET *src, DAT_RMR_CONTEXT ctx,
             DAT_VADDR addr)
{
  DAT_RMR_TRIPLET remote = { .rmr_context = ctx, .virtual_address = addr,
                             .segment_length = src->segment_length };
  DAT_DTO_COOKIE cookie = { .as_64 = 0x77 };
  assert_dat(dat_ep_post_rdma_write(ep, 1, src, cookie, &remote, DAT_COMPLETION_DEFAULT_FLAG),
             DAT_SUCCESS);
  DAT_EVENT ev;
  wait_event(dto, &ev);
  g_assert_cmphex(ev.event_number, ==, DAT_DTO_COMPLETION_EVENT);
  g_assert_cmpuint(ev.event_data.dto_completion_event_data.user_cookie.as_64, ==, 0x77);
  return ev.event_data.dto_completion_event_data.status;
}

/* The peer's Write into an unbound or invalidated RMR (@p st its
 * completion) was refused: it completes with DAT_DTO_ERR_REMOTE_ACCESS
 * where the transport reports the responder's refusal to the requester
 * (InfiniBand, emul); over iWARP an RDMA Write completes once sent (RFC
 * 5040 has no Write response), so the refusal arrives as the responder's
 * Terminate: the connection breaks on both sides. */
static void
assert_write_refused(pair_t *p, DAT_DTO_COMPLETION_STATUS st)
{
  if (st == DAT_DTO_ERR_REMOTE_ACCESS)
    return;
  g_assert_cmpint(st, ==, DAT_DTO_SUCCESS);
  DAT_EVENT ev;
  wait_event(p->c_conn, &ev);
  g_assert_cmphex(ev.event_number, ==, DAT_CONNECTION_EVENT_BROKEN);
  wait_event(p->s_conn, &ev);
  g_assert_cmphex(ev.event_number, ==, DAT_CONNECTION_EVENT_BROKEN);
}

static void
test_rmr_bind(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an RMR bound through an EP takes the peer's RDMA Write and Read (the bytes "
                 "land); its LMR is in use while bound; unbound, the peer's Write is refused "
                 "(DAT_DTO_ERR_REMOTE_ACCESS, or over iWARP a broken connection)");
  pair_t p;
  pair_connect(f, &p);
  static unsigned char sbuf[256], cbuf[256], cback[256];
  reg_t s, c, cb;
  reg_make(f, sbuf, sizeof(sbuf), &s);
  reg_make(f, cbuf, sizeof(cbuf), &c);
  reg_make(f, cback, sizeof(cback), &cb);
  DAT_RMR_HANDLE rmr;
  DAT_RMR_SCOPE scope;
  rmr_make(f, &rmr, &scope);
  DAT_RMR_CONTEXT ctx = rmr_bind_wait(rmr, s.lmr, &s.iov, p.s_ep, p.s_dto, 42);
  g_assert_cmpuint(ctx, !=, 0);
  DAT_RMR_PARAM rp;
  assert_dat(dat_rmr_query(rmr, DAT_RMR_FIELD_ALL, &rp), DAT_SUCCESS);
  g_assert_cmpuint(rp.rmr_context, ==, ctx);
  g_assert_cmpint(rp.rmr_scope, ==, scope);
  g_assert_true(rp.pz_handle == f->pz);
  g_assert_cmpuint(rp.lmr_triplet.segment_length, ==, sizeof(sbuf));
  DAT_HANDLE_TYPE ht;
  assert_dat(dat_get_handle_type(rmr, &ht), DAT_SUCCESS);
  g_assert_cmpint(ht, ==, DAT_HANDLE_TYPE_RMR);
  /* Bound, the LMR is in use (DAT 2.0 dat_lmr_free). */
  assert_dat(dat_lmr_free(s.lmr), DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_LMR_IN_USE));

  memset(cbuf, 0xa5, sizeof(cbuf));
  g_assert_cmpint(write_status(p.c_ep, p.c_dto, &c.iov, ctx, s.iov.virtual_address), ==,
                  DAT_DTO_SUCCESS);
  /* Over iWARP the Write completes once sent (RFC 5040): the Read behind
   * it on the same connection completes only after it was placed. */
  DAT_RMR_TRIPLET remote = { .rmr_context = ctx, .virtual_address = s.iov.virtual_address,
                             .segment_length = sizeof(sbuf) };
  DAT_DTO_COOKIE cookie = { .as_64 = 0x88 };
  assert_dat(dat_ep_post_rdma_read(p.c_ep, 1, &cb.iov, cookie, &remote,
                                   DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  DAT_EVENT ev;
  wait_event(p.c_dto, &ev);
  g_assert_cmphex(ev.event_number, ==, DAT_DTO_COMPLETION_EVENT);
  g_assert_cmpint(ev.event_data.dto_completion_event_data.status, ==, DAT_DTO_SUCCESS);
  g_assert_cmpint(ev.event_data.dto_completion_event_data.operation, ==, DAT_DTO_RDMA_READ);
  for (size_t i = 0; i < sizeof(cback); i++) {
    g_assert_cmpint(sbuf[i], ==, 0xa5);
    g_assert_cmpint(cback[i], ==, 0xa5);
  }

  /* DAT 2.0 dat_rmr_bind: a zero-length triplet unbinds. */
  DAT_LMR_TRIPLET none = { 0 };
  rmr_bind_wait(rmr, DAT_HANDLE_NULL, &none, p.s_ep, p.s_dto, 43);
  assert_dat(dat_rmr_query(rmr, DAT_RMR_FIELD_RMR_CONTEXT, &rp), DAT_SUCCESS);
  g_assert_cmpuint(rp.rmr_context, ==, 0);
  /* A bind and an unbind posted back to back complete in order, each with
   * its own cookie. */
  DAT_RMR_COOKIE rc44 = { .as_64 = 44 }, rc45 = { .as_64 = 45 };
  DAT_RMR_CONTEXT ctx2 = 0, ignored;
  assert_dat(dat_rmr_bind(rmr, s.lmr, &s.iov, DAT_MEM_PRIV_REMOTE_WRITE_FLAG, DAT_VA_TYPE_VA,
                          p.s_ep, rc44, DAT_COMPLETION_DEFAULT_FLAG, &ctx2), DAT_SUCCESS);
  assert_dat(dat_rmr_bind(rmr, DAT_HANDLE_NULL, &none, 0, DAT_VA_TYPE_VA, p.s_ep, rc45,
                          DAT_COMPLETION_DEFAULT_FLAG, &ignored), DAT_SUCCESS);
  for (DAT_UINT64 want = 44; want <= 45; want++) {
    wait_event(p.s_dto, &ev);
    g_assert_cmphex(ev.event_number, ==, DAT_RMR_BIND_COMPLETION_EVENT);
    g_assert_true(ev.event_data.rmr_completion_event_data.rmr_handle == rmr);
    g_assert_cmpuint(ev.event_data.rmr_completion_event_data.user_cookie.as_64, ==, want);
    g_assert_cmpint(ev.event_data.rmr_completion_event_data.status, ==, DAT_RMR_BIND_SUCCESS);
  }
  memset(sbuf, 0, sizeof(sbuf));
  assert_write_refused(&p, write_status(p.c_ep, p.c_dto, &c.iov, ctx2, s.iov.virtual_address));
  for (size_t i = 0; i < sizeof(sbuf); i++)
    g_assert_cmpint(sbuf[i], ==, 0);
  assert_dat(dat_rmr_free(rmr), DAT_SUCCESS);
  assert_dat(dat_lmr_free(s.lmr), DAT_SUCCESS);
}

static void
test_rmr_send_invalidate(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a Send with Invalidate unbinds the peer's RMR: the receive completes as "
                 "DAT_DTO_RECEIVE_WITH_INVALIDATE naming its context, and a Write to it is then "
                 "refused");
  pair_t p;
  pair_connect(f, &p);
  static unsigned char sbuf[128], rbuf[64], msg[64], cbuf[128];
  reg_t s, r, m, c;
  reg_make(f, sbuf, sizeof(sbuf), &s);
  reg_make(f, rbuf, sizeof(rbuf), &r);
  reg_make(f, msg, sizeof(msg), &m);
  reg_make(f, cbuf, sizeof(cbuf), &c);
  DAT_RMR_HANDLE rmr;
  DAT_RMR_SCOPE scope;
  rmr_make(f, &rmr, &scope);
  DAT_RMR_CONTEXT ctx = rmr_bind_wait(rmr, s.lmr, &s.iov, p.s_ep, p.s_dto, 7);
  DAT_DTO_COOKIE rc = { .as_64 = 0x99 };
  assert_dat(dat_ep_post_recv(p.s_ep, 1, &r.iov, rc, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  g_assert_cmpint(write_status(p.c_ep, p.c_dto, &c.iov, ctx, s.iov.virtual_address), ==,
                  DAT_DTO_SUCCESS);
  memset(msg, 0x42, sizeof(msg));
  DAT_DTO_COOKIE sc = { .as_64 = 0x55 };
  assert_dat(prov_of(p.c_ep)->ep_post_send_with_invalidate_func(p.c_ep, 1, &m.iov, sc, DAT_COMPLETION_DEFAULT_FLAG,
                                              DAT_TRUE, ctx), DAT_SUCCESS);
  DAT_EVENT ev;
  wait_event(p.c_dto, &ev);
  g_assert_cmpint(ev.event_data.dto_completion_event_data.status, ==, DAT_DTO_SUCCESS);
  g_assert_cmpuint(ev.event_data.dto_completion_event_data.user_cookie.as_64, ==, 0x55);
  wait_event(p.s_dto, &ev);
  const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
  g_assert_cmphex(ev.event_number, ==, DAT_DTO_COMPLETION_EVENT);
  g_assert_cmpint(d->status, ==, DAT_DTO_SUCCESS);
  g_assert_cmpint(d->operation, ==, DAT_DTO_RECEIVE_WITH_INVALIDATE);
  g_assert_cmpuint(d->rmr_context, ==, ctx);
  g_assert_cmpuint(d->transfered_length, ==, sizeof(msg));
  for (size_t i = 0; i < sizeof(rbuf); i++)
    g_assert_cmpint(rbuf[i], ==, 0x42);
  DAT_RMR_PARAM rp;
  assert_dat(dat_rmr_query(rmr, DAT_RMR_FIELD_RMR_CONTEXT, &rp), DAT_SUCCESS);
  g_assert_cmpuint(rp.rmr_context, ==, 0);
  memset(sbuf, 0, sizeof(sbuf));
  assert_write_refused(&p, write_status(p.c_ep, p.c_dto, &c.iov, ctx, s.iov.virtual_address));
  for (size_t i = 0; i < sizeof(sbuf); i++)
    g_assert_cmpint(sbuf[i], ==, 0);
}

static void
test_rmr_read_to_rmr(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an RDMA Read to RMR lands the peer's bytes in a local RMR's range");
  pair_t p;
  pair_connect(f, &p);
  static unsigned char src[128], sink[128];
  reg_t s, k;
  reg_make(f, src, sizeof(src), &s);
  reg_make(f, sink, sizeof(sink), &k);
  DAT_RMR_HANDLE srmr, krmr;
  DAT_RMR_SCOPE scope;
  rmr_make(f, &srmr, &scope);
  rmr_make(f, &krmr, &scope);
  DAT_RMR_CONTEXT sctx = rmr_bind_wait(srmr, s.lmr, &s.iov, p.s_ep, p.s_dto, 1);
  DAT_RMR_CONTEXT kctx = rmr_bind_wait(krmr, k.lmr, &k.iov, p.c_ep, p.c_dto, 2);
  memset(src, 0x6b, sizeof(src));
  DAT_RMR_TRIPLET local = { .rmr_context = kctx, .virtual_address = k.iov.virtual_address,
                            .segment_length = sizeof(sink) };
  DAT_RMR_TRIPLET remote = { .rmr_context = sctx, .virtual_address = s.iov.virtual_address,
                             .segment_length = sizeof(src) };
  DAT_DTO_COOKIE cookie = { .as_64 = 0x31 };
  DAT_RETURN ret = prov_of(p.c_ep)->ep_post_rdma_read_to_rmr_func(p.c_ep, &local, cookie, &remote,
                                                DAT_COMPLETION_DEFAULT_FLAG);
  if (DAT_GET_TYPE(ret) == DAT_MODEL_NOT_SUPPORTED) {
    g_test_skip("the interface cannot read into RMRs (rdma_read_local_extensions)");
    return;
  }
  assert_dat(ret, DAT_SUCCESS);
  DAT_EVENT ev;
  wait_event(p.c_dto, &ev);
  g_assert_cmphex(ev.event_number, ==, DAT_DTO_COMPLETION_EVENT);
  g_assert_cmpint(ev.event_data.dto_completion_event_data.status, ==, DAT_DTO_SUCCESS);
  g_assert_cmpuint(ev.event_data.dto_completion_event_data.user_cookie.as_64, ==, 0x31);
  for (size_t i = 0; i < sizeof(sink); i++)
    g_assert_cmpint(sink[i], ==, 0x6b);
  /* A context that names no RMR of ours. */
  local.rmr_context = kctx + 1;
  assert_dat(prov_of(p.c_ep)->ep_post_rdma_read_to_rmr_func(p.c_ep, &local, cookie, &remote,
                                          DAT_COMPLETION_DEFAULT_FLAG),
             DAT_ERR(DAT_PROTECTION_VIOLATION, DAT_PROTECTION_RDMA_READ));
}

typedef struct {
  DAT_IA_HANDLE ia;
  DAT_CONN_QUAL qual;
  DAT_EVD_HANDLE cr_evd, s_conn;
  DAT_EP_HANDLE s_ep;
  DAT_PSP_HANDLE psp;
} late_listen_t;

/* The server side, in another thread: a listener made 3 s late (longer
 * than a peer registering its memory before it listens takes on a loaded
 * emulated host, where 2 s was seen to be too short), which accepts the
 * request with its EP. */
static gpointer
listen_late(gpointer data)
{
  late_listen_t *l = data;
  g_usleep(3000 * 1000);
  assert_dat(dat_psp_create(l->ia, l->qual, l->cr_evd, DAT_PSP_CONSUMER_FLAG, &l->psp), DAT_SUCCESS);
  DAT_EVENT ev;
  wait_event_of(l->cr_evd, DAT_CONNECTION_REQUEST_EVENT, &ev);
  assert_dat(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, l->s_ep, 0, NULL), DAT_SUCCESS);
  wait_event_of(l->s_conn, DAT_CONNECTION_EVENT_ESTABLISHED, &ev);
  return NULL;
}

static void
test_cno_modify_late(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("dat_evd_modify_cno gives a CNO to EVDs created without one: a software EVD "
                 "holding an event is named by the next dat_cno_wait at once; the two DTO "
                 "EVDs of a connected pair, given the CNO before a Send, are each named by a "
                 "wait (the receive's carrying the bytes); with nothing new the wait times "
                 "out; the EVDs given no CNO again, the CNO frees");
  DAT_CNO_HANDLE cno;
  DAT_EVD_HANDLE found = DAT_HANDLE_NULL, sw;
  assert_dat(dat_cno_create(f->ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 4, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &sw), DAT_SUCCESS);
  post_software_event(sw, &found);
  assert_dat(dat_evd_modify_cno(sw, cno), DAT_SUCCESS);
  assert_dat(dat_cno_wait(cno, 5000000, &found), DAT_SUCCESS);
  g_assert_true(found == sw);
  DAT_EVENT ev;
  assert_dat(dat_evd_dequeue(sw, &ev), DAT_SUCCESS);
  g_assert_cmphex(DAT_GET_TYPE(dat_cno_wait(cno, 10000, &found)), ==, DAT_TIMEOUT_EXPIRED);

  pair_t p;
  pair_connect(f, &p);
  static char rbuf[32], sbuf[32] = "through a CNO given late";
  reg_t r, sb;
  reg_make(f, rbuf, sizeof(rbuf), &r);
  reg_make(f, sbuf, sizeof(sbuf), &sb);
  DAT_DTO_COOKIE rc = { .as_64 = 7 }, sc = { .as_64 = 8 };
  assert_dat(dat_ep_post_recv(p.s_ep, 1, &r.iov, rc, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  assert_dat(dat_evd_modify_cno(p.s_dto, cno), DAT_SUCCESS);
  assert_dat(dat_evd_modify_cno(p.c_dto, cno), DAT_SUCCESS);
  assert_dat(dat_ep_post_send(p.c_ep, 1, &sb.iov, sc, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  gboolean s_seen = FALSE, c_seen = FALSE;
  for (int i = 0; i < 2; i++) {
    assert_dat(dat_cno_wait(cno, 5000000, &found), DAT_SUCCESS);
    g_assert_true(found == p.s_dto || found == p.c_dto);
    assert_dat(dat_evd_dequeue(found, &ev), DAT_SUCCESS);
    const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
    g_assert_cmpint(d->status, ==, DAT_DTO_SUCCESS);
    if (found == p.s_dto) {
      g_assert_false(s_seen);
      s_seen = TRUE;
      g_assert_cmpuint(d->user_cookie.as_64, ==, 7);
      g_assert_cmpstr(rbuf, ==, sbuf);
    } else {
      g_assert_false(c_seen);
      c_seen = TRUE;
      g_assert_cmpuint(d->user_cookie.as_64, ==, 8);
    }
  }
  g_assert_cmphex(DAT_GET_TYPE(dat_cno_wait(cno, 10000, &found)), ==, DAT_TIMEOUT_EXPIRED);
  for (DAT_EVD_HANDLE *e = (DAT_EVD_HANDLE[]) { sw, p.s_dto, p.c_dto, NULL }; *e != NULL; e++)
    assert_dat(dat_evd_modify_cno(*e, DAT_HANDLE_NULL), DAT_SUCCESS);
  assert_dat(dat_cno_free(cno), DAT_SUCCESS);
  assert_dat(dat_ep_disconnect(p.c_ep, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  /* The fixture's abrupt close frees the rest. */
}

/* EVDs made without a CNO whose first dat_evd_modify_cno both threads of
 * /dat/cno/modify-race make at once: that first call gives the EVD its
 * descriptor, the step a racing attach must not read half-done. */
#define MODIFY_RACE_FRESH 24

/* One side of /dat/cno/modify-race: each fresh EVD given its first CNO,
 * then the first EVD given to each CNO in turn and to none, and its CNO
 * read back. */
typedef struct {
  DAT_EVD_HANDLE evd[MODIFY_RACE_FRESH];
  DAT_CNO_HANDLE cno[2];
  int rounds;
} modify_race_t;

static gpointer
modify_race_side(gpointer data)
{
  modify_race_t *m = data;
  for (int k = 0; k < MODIFY_RACE_FRESH; k++)
    assert_dat(dat_evd_modify_cno(m->evd[k], m->cno[k % 2]), DAT_SUCCESS);
  for (int i = 0; i < m->rounds; i++) {
    DAT_CNO_HANDLE to = i % 3 == 2 ? DAT_HANDLE_NULL : m->cno[i % 3];
    assert_dat(dat_evd_modify_cno(m->evd[0], to), DAT_SUCCESS);
    DAT_EVD_PARAM prm;
    assert_dat(dat_evd_query(m->evd[0], DAT_EVD_FIELD_CNO, &prm), DAT_SUCCESS);
    g_assert_true(prm.cno_handle == DAT_HANDLE_NULL || prm.cno_handle == m->cno[0] ||
                  prm.cno_handle == m->cno[1]);
  }
  return NULL;
}

static void
test_cno_modify_race(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("two threads give 24 EVDs made without a CNO their first CNO at once, then "
                 "one of them to two CNOs and to none, 300 times each, while reading its CNO "
                 "back: every call succeeds; given to the first CNO at the end, an event on it "
                 "is named by that CNO's wait, and once the EVDs leave them both CNOs free");
  modify_race_t m = { .rounds = 300 };
  for (int k = 0; k < MODIFY_RACE_FRESH; k++)
    assert_dat(dat_evd_create(f->ia, 4, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &m.evd[k]),
               DAT_SUCCESS);
  for (int i = 0; i < 2; i++)
    assert_dat(dat_cno_create(f->ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &m.cno[i]), DAT_SUCCESS);
  GThread *t = g_thread_new("modify-race", modify_race_side, &m);
  modify_race_side(&m);
  g_thread_join(t);
  assert_dat(dat_evd_modify_cno(m.evd[0], m.cno[0]), DAT_SUCCESS);
  DAT_EVD_HANDLE found = DAT_HANDLE_NULL;
  post_software_event(m.evd[0], &found);
  assert_dat(dat_cno_wait(m.cno[0], 5000000, &found), DAT_SUCCESS);
  g_assert_true(found == m.evd[0]);
  DAT_EVENT ev;
  assert_dat(dat_evd_dequeue(m.evd[0], &ev), DAT_SUCCESS);
  for (int k = 1; k < MODIFY_RACE_FRESH; k++) {
    assert_dat(dat_evd_modify_cno(m.evd[k], DAT_HANDLE_NULL), DAT_SUCCESS);
    assert_dat(dat_evd_free(m.evd[k]), DAT_SUCCESS);
  }
  assert_dat(dat_cno_free(m.cno[1]), DAT_SUCCESS);
  assert_dat(dat_evd_free(m.evd[0]), DAT_SUCCESS);
  assert_dat(dat_cno_free(m.cno[0]), DAT_SUCCESS);
}

static void
test_connect_before_listen(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("dat_ep_connect to a qualifier whose PSP is made 3 s later is tried again "
                 "until it is there (a consumer that tells its peer to connect before it "
                 "listens, as dtestx's server does): the connection is established, the "
                 "receive posted before the connect is not flushed but takes the peer's Send; "
                 "with a 50 ms connect timeout and nobody listening, the connect is refused");
  DAT_IA_ATTR ia_attr;
  assert_dat(dat_ia_query(f->ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, 0, NULL), DAT_SUCCESS);
  pair_t p;
  pair_evds_create(f, 0, &p);
  DAT_EP_HANDLE x_ep;
  assert_dat(dat_ep_create(f->ia, f->pz, p.s_dto, p.s_dto, p.s_conn, NULL, &p.s_ep), DAT_SUCCESS);
  assert_dat(dat_ep_create(f->ia, f->pz, p.c_dto, p.c_dto, p.c_conn, NULL, &p.c_ep), DAT_SUCCESS);
  assert_dat(dat_ep_create(f->ia, f->pz, p.c_dto, p.c_dto, p.c_conn, NULL, &x_ep), DAT_SUCCESS);
  /* A qualifier nobody listens on: one the IA chose, let go. */
  late_listen_t l = { .ia = f->ia, .cr_evd = p.cr_evd, .s_conn = p.s_conn, .s_ep = p.s_ep };
  assert_dat(dat_psp_create_any(f->ia, &l.qual, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &l.psp), DAT_SUCCESS);
  assert_dat(dat_psp_free(l.psp), DAT_SUCCESS);

  static char rbuf[64], sbuf[64] = "sent once the listener came";
  reg_t r, sb;
  reg_make(f, rbuf, sizeof(rbuf), &r);
  reg_make(f, sbuf, sizeof(sbuf), &sb);
  DAT_DTO_COOKIE rc = { .as_64 = 5 }, sc = { .as_64 = 6 };
  assert_dat(dat_ep_post_recv(p.c_ep, 1, &r.iov, rc, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  GThread *t = g_thread_new("listen-late", listen_late, &l);
  assert_dat(dat_ep_connect(p.c_ep, ia_attr.ia_address_ptr, l.qual, 10 * 1000 * 1000, 0, NULL,
                            DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG), DAT_SUCCESS);
  /* The refusals are tried again as this side takes them from its
   * connection EVD, as a client waiting for its connection does. */
  DAT_EVENT ev;
  wait_event_of(p.c_conn, DAT_CONNECTION_EVENT_ESTABLISHED, &ev);
  g_thread_join(t);
  assert_dat(dat_ep_post_send(p.s_ep, 1, &sb.iov, sc, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  wait_event_of(p.s_dto, DAT_DTO_COMPLETION_EVENT, &ev);
  g_assert_cmpint(ev.event_data.dto_completion_event_data.status, ==, DAT_DTO_SUCCESS);
  /* The first completion the consumer sees is its receive's, taking the Send. */
  wait_event_of(p.c_dto, DAT_DTO_COMPLETION_EVENT, &ev);
  g_assert_cmpuint(ev.event_data.dto_completion_event_data.user_cookie.as_64, ==, 5);
  g_assert_cmpint(ev.event_data.dto_completion_event_data.status, ==, DAT_DTO_SUCCESS);
  g_assert_cmpint(ev.event_data.dto_completion_event_data.operation, ==, DAT_DTO_RECEIVE);
  g_assert_cmpstr(rbuf, ==, sbuf);
  assert_dat(dat_evd_dequeue(p.c_dto, &ev), DAT_QUEUE_EMPTY);

  /* Nobody listening and a 50 ms timeout: refused within it (and tries). */
  DAT_CONN_QUAL none;
  DAT_PSP_HANDLE psp2;
  assert_dat(dat_psp_create_any(f->ia, &none, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp2), DAT_SUCCESS);
  assert_dat(dat_psp_free(psp2), DAT_SUCCESS);
  gint64 t0 = g_get_monotonic_time();
  assert_dat(dat_ep_connect(x_ep, ia_attr.ia_address_ptr, none, 50 * 1000, 0, NULL,
                            DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG), DAT_SUCCESS);
  wait_event(p.c_conn, &ev);
  g_assert_true(ev.event_number == DAT_CONNECTION_EVENT_NON_PEER_REJECTED ||
                ev.event_number == DAT_CONNECTION_EVENT_UNREACHABLE);
  g_test_message("refused after %" G_GINT64_FORMAT " ms", (g_get_monotonic_time() - t0) / 1000);

  assert_dat(dat_ep_disconnect(p.c_ep, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  assert_dat(dat_psp_free(l.psp), DAT_SUCCESS);
  assert_dat(dat_ep_free(x_ep), DAT_SUCCESS);
  assert_dat(dat_lmr_free(r.lmr), DAT_SUCCESS);
  assert_dat(dat_lmr_free(sb.lmr), DAT_SUCCESS);
}

/* The value of provider attribute @p name of @p ia ("" when it has none). */
static const char *
prov_attr(fixture_t *f, const char *name)
{
  DAT_PROVIDER_ATTR pa;
  assert_dat(dat_ia_query(f->ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL, &pa), DAT_SUCCESS);
  for (DAT_COUNT i = 0; i < pa.num_provider_specific_attr; i++)
    if (strcmp(pa.provider_specific_attr[i].name, name) == 0)
      return pa.provider_specific_attr[i].value;
  return "";
}

/* The next completion on @p dto: an extension's (DAT_IB_DTO_EVENT) of
 * operation @p op, extension type @p type, cookie @p cookie, successful. */
static DAT_IB_EXTENSION_EVENT_DATA
wait_ext(DAT_EVD_HANDLE dto, int op, DAT_IB_EXT_TYPE type, DAT_UINT64 cookie, DAT_EVENT *ev)
{
  wait_event_of(dto, (DAT_EVENT_NUMBER) DAT_IB_DTO_EVENT, ev);
  const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev->event_data.dto_completion_event_data;
  DAT_IB_EXTENSION_EVENT_DATA x;
  memcpy(&x, ev->event_extension_data, sizeof(x));
  g_assert_cmpint(d->status, ==, DAT_DTO_SUCCESS);
  g_assert_cmpint(d->operation, ==, op);
  g_assert_cmpuint(d->user_cookie.as_64, ==, cookie);
  g_assert_cmpint(x.type, ==, type);
  g_assert_cmpint(x.status, ==, DAT_OP_SUCCESS);
  return x;
}

static void
test_ib_extensions(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("DAT's IB extension: the IA says DAT_EXTENSION_IB and which operations it has; "
                 "where the interface has atomics, fetch-and-add and compare-and-swap on the "
                 "peer's word return the old value and change the word (DAT_IB_DTO_EVENT); "
                 "where it has immediate data, an RDMA Write with immediate data lands and "
                 "completes the peer's receive carrying the value, and a plain Write after it "
                 "completes as a plain one; without them the posts are refused; an operation "
                 "not offered is DAT_NOT_IMPLEMENTED; dat_ib_open_query opens an IA for its "
                 "attributes");
  DAT_IA_ATTR ia_attr;
  assert_dat(dat_ia_query(f->ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, 0, NULL), DAT_SUCCESS);
  g_assert_cmpint(ia_attr.extension_supported, ==, DAT_EXTENSION_IB);
  g_assert_cmpint(ia_attr.extension_version, ==, DAT_IB_EXTENSION_VERSION);
  gboolean atomics = strcmp(prov_attr(f, DAT_IB_ATTR_FETCH_AND_ADD), "TRUE") == 0;
  g_assert_cmpstr(prov_attr(f, DAT_IB_ATTR_CMP_AND_SWAP), ==, atomics ? "TRUE" : "FALSE");
  gboolean imm = strcmp(prov_attr(f, DAT_IB_ATTR_IMMED_DATA), "TRUE") == 0;
  g_test_message("%s: atomics %s, immediate data %s", provider, atomics ? "yes" : "no", imm ? "yes" : "no");

  pair_t p;
  pair_connect(f, &p);
  static DAT_UINT64 word[4], old[2];
  static unsigned char src[64], dst[64], rbuf[64];
  DAT_REGION_DESCRIPTION region = { .for_va = word };
  DAT_LMR_HANDLE wlmr;
  DAT_LMR_CONTEXT wl;
  DAT_RMR_CONTEXT wr;
  DAT_VLEN vlen;
  DAT_VADDR vaddr;
  DAT_MEM_PRIV_FLAGS privs = DAT_MEM_PRIV_ALL_FLAG | (atomics ? DAT_IB_MEM_PRIV_REMOTE_ATOMIC : 0);
  assert_dat(dat_lmr_create(f->ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(word), f->pz, privs,
                            DAT_VA_TYPE_VA, &wlmr, &wl, &wr, &vlen, &vaddr), DAT_SUCCESS);
  reg_t o, s, r;
  reg_make(f, old, sizeof(old), &o);
  reg_make(f, src, sizeof(src), &s);
  reg_make(f, rbuf, sizeof(rbuf), &r);
  DAT_LMR_HANDLE dlmr;
  DAT_LMR_CONTEXT dl;
  DAT_RMR_CONTEXT dr;
  region.for_va = dst;
  assert_dat(dat_lmr_create(f->ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(dst), f->pz, DAT_MEM_PRIV_ALL_FLAG,
                            DAT_VA_TYPE_VA, &dlmr, &dl, &dr, &vlen, &vaddr), DAT_SUCCESS);
  DAT_RMR_TRIPLET at = { .rmr_context = wr, .virtual_address = (DAT_VADDR) (uintptr_t) &word[1],
                         .segment_length = 8 };
  DAT_LMR_TRIPLET o0 = o.iov, o1 = o.iov;
  o0.segment_length = o1.segment_length = 8;
  o1.virtual_address += 8;
  DAT_EVENT ev;
  DAT_DTO_COOKIE c1 = { .as_64 = 1 }, c2 = { .as_64 = 2 }, c3 = { .as_64 = 3 }, c4 = { .as_64 = 4 };
  word[1] = 100;
  if (atomics) {
    assert_dat(dat_ib_post_fetch_and_add(p.c_ep, 5, &o0, c1, &at, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    wait_ext(p.c_dto, DAT_IB_DTO_FETCH_ADD, DAT_IB_FETCH_AND_ADD, 1, &ev);
    g_assert_cmpuint(old[0], ==, 100);
    g_assert_cmpuint(word[1], ==, 105);
    assert_dat(dat_ib_post_cmp_and_swap(p.c_ep, 105, 7, &o1, c2, &at, DAT_COMPLETION_DEFAULT_FLAG),
               DAT_SUCCESS);
    wait_ext(p.c_dto, DAT_IB_DTO_CMP_SWAP, DAT_IB_CMP_AND_SWAP, 2, &ev);
    g_assert_cmpuint(old[1], ==, 105);
    g_assert_cmpuint(word[1], ==, 7);
    g_assert_cmpuint(word[0], ==, 0);
    g_assert_cmpuint(word[2], ==, 0);
  } else {
    g_assert_cmphex(dat_ib_post_fetch_and_add(p.c_ep, 5, &o0, c1, &at, DAT_COMPLETION_DEFAULT_FLAG), !=,
                    DAT_SUCCESS);
    g_assert_cmpuint(word[1], ==, 100);
  }

  DAT_RMR_TRIPLET to = { .rmr_context = dr, .virtual_address = (DAT_VADDR) (uintptr_t) dst,
                         .segment_length = sizeof(dst) };
  DAT_LMR_TRIPLET s32 = s.iov;
  s32.segment_length = 32;
  for (size_t i = 0; i < sizeof(src); i++)
    src[i] = (unsigned char) (i + 1);
  if (imm) {
    DAT_DTO_COOKIE rc = { .as_64 = 9 };
    assert_dat(dat_ep_post_recv(p.s_ep, 1, &r.iov, rc, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    assert_dat(dat_ib_post_rdma_write_immed(p.c_ep, 1, &s32, c3, &to, 0x1234, DAT_COMPLETION_DEFAULT_FLAG),
               DAT_SUCCESS);
    wait_ext(p.c_dto, DAT_IB_DTO_RDMA_WRITE_IMMED, DAT_IB_RDMA_WRITE_IMMED, 3, &ev);
    DAT_IB_EXTENSION_EVENT_DATA x = wait_ext(p.s_dto, DAT_IB_DTO_RECV_IMMED, DAT_IB_RDMA_WRITE_IMMED_DATA, 9, &ev);
    g_assert_cmphex(x.val.immed.data, ==, 0x1234);
    g_assert_cmpmem(dst, 32, src, 32);
    /* The Write's length on InfiniBand; RFC 7306 carries none (8: the value's bytes). */
    g_test_message("receive length %u", (unsigned) ev.event_data.dto_completion_event_data.transfered_length);
    /* A plain Write with the same cookie is a plain one. */
    assert_dat(dat_ep_post_rdma_write(p.c_ep, 1, &s32, c3, &to, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    wait_event_of(p.c_dto, DAT_DTO_COMPLETION_EVENT, &ev);
    g_assert_cmpint(ev.event_data.dto_completion_event_data.operation, ==, DAT_DTO_RDMA_WRITE);
    g_assert_cmpuint(ev.event_data.dto_completion_event_data.user_cookie.as_64, ==, 3);
  } else {
    g_assert_cmphex(dat_ib_post_rdma_write_immed(p.c_ep, 1, &s32, c4, &to, 0x1234, DAT_COMPLETION_DEFAULT_FLAG),
                    !=, DAT_SUCCESS);
  }
  /* A datagram send on a connected EP is refused; counters are not offered. */
  DAT_RETURN nr = dat_extension_op(p.c_ep, (DAT_EXTENDED_OP) DAT_IB_UD_SEND_OP, 1, &s32, NULL, c4,
                                   DAT_COMPLETION_DEFAULT_FLAG);
  g_assert_cmphex(DAT_GET_TYPE(nr), ==, DAT_INVALID_PARAMETER);
  nr = dat_extension_op(p.c_ep, (DAT_EXTENDED_OP) DAT_IB_QUERY_COUNTERS_OP, 0, NULL, 0);
  g_assert_cmphex(DAT_GET_TYPE(nr), ==, DAT_NOT_IMPLEMENTED);

  DAT_IA_HANDLE qia = DAT_HANDLE_NULL;
  DAT_IA_ATTR qa;
  DAT_PROVIDER_ATTR qp;
  assert_dat(dat_ib_open_query(provider, &qia, DAT_IA_FIELD_ALL, &qa, DAT_PROVIDER_FIELD_ALL, &qp),
             DAT_SUCCESS);
  g_assert_cmpint(qa.extension_supported, ==, DAT_EXTENSION_IB);
  g_assert_cmpstr(qp.provider_name, ==, provider);
  assert_dat(dat_ib_close_query(qia), DAT_SUCCESS);

  assert_dat(dat_lmr_free(wlmr), DAT_SUCCESS);
  assert_dat(dat_lmr_free(dlmr), DAT_SUCCESS);
  assert_dat(dat_lmr_free(o.lmr), DAT_SUCCESS);
  assert_dat(dat_lmr_free(s.lmr), DAT_SUCCESS);
  assert_dat(dat_lmr_free(r.lmr), DAT_SUCCESS);
}

static void
test_lmr_sync(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("dat_lmr_sync_rdma_read and _write accept triplets inside live LMRs and refuse "
                 "a range past the LMR, a freed lmr_context and a stale IA");
  static char buf[128];
  reg_t r;
  reg_make(f, buf, sizeof(buf), &r);
  assert_dat(dat_lmr_sync_rdma_read(f->ia, &r.iov, 1), DAT_SUCCESS);
  assert_dat(dat_lmr_sync_rdma_write(f->ia, &r.iov, 1), DAT_SUCCESS);
  DAT_LMR_TRIPLET past = r.iov;
  past.virtual_address += 64;
  assert_dat(dat_lmr_sync_rdma_write(f->ia, &past, 1),
             DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2));
  assert_dat(dat_lmr_free(r.lmr), DAT_SUCCESS);
  assert_dat(dat_lmr_sync_rdma_read(f->ia, &r.iov, 1),
             DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2));
  assert_dat(dat_lmr_sync_rdma_read(f->pz, &r.iov, 1),
             DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA));
}

static void
test_lmr_shared(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("shared virtual memory registers under its cookie, twice over the same pages, "
                 "is queried as shared and its triplets are accepted; a missing cookie is refused");
  DAT_PROVIDER_ATTR pr_attr;
  assert_dat(dat_ia_query(f->ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL, &pr_attr), DAT_SUCCESS);
  g_assert_cmphex(pr_attr.lmr_mem_types_supported & DAT_MEM_TYPE_SHARED_VIRTUAL, !=, 0);
  static char buf[256];
  static char cookie[DAT_LMR_COOKIE_SIZE] = "itapi-dat shared test";
  DAT_REGION_DESCRIPTION region = { .for_shared_memory = { .virtual_address = buf,
                                                           .shared_memory_id = &cookie } };
  DAT_LMR_HANDLE lmr[2];
  DAT_LMR_CONTEXT lctx[2];
  DAT_RMR_CONTEXT rctx;
  DAT_VLEN len;
  DAT_VADDR addr;
  for (int i = 0; i < 2; i++) {
    assert_dat(dat_lmr_create(f->ia, DAT_MEM_TYPE_SHARED_VIRTUAL, region, sizeof(buf), f->pz,
                              DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr[i], &lctx[i], &rctx,
                              &len, &addr), DAT_SUCCESS);
    g_assert_cmpuint(addr, ==, (DAT_VADDR) (uintptr_t) buf);
    g_assert_cmpuint(len, ==, sizeof(buf));
  }
  DAT_LMR_PARAM lp;
  assert_dat(dat_lmr_query(lmr[1], DAT_LMR_FIELD_ALL, &lp), DAT_SUCCESS);
  g_assert_cmpint(lp.mem_type, ==, DAT_MEM_TYPE_SHARED_VIRTUAL);
  g_assert_true(lp.region_desc.for_shared_memory.shared_memory_id == &cookie);
  g_assert_cmpuint(lp.registered_address, ==, (DAT_VADDR) (uintptr_t) buf);
  DAT_LMR_TRIPLET iov = { .virtual_address = (DAT_VADDR) (uintptr_t) buf,
                          .segment_length = sizeof(buf), .lmr_context = lctx[0] };
  assert_dat(dat_lmr_sync_rdma_read(f->ia, &iov, 1), DAT_SUCCESS);
  DAT_REGION_DESCRIPTION nocookie = { .for_shared_memory = { .virtual_address = buf } };
  DAT_LMR_HANDLE none;
  assert_dat(dat_lmr_create(f->ia, DAT_MEM_TYPE_SHARED_VIRTUAL, nocookie, sizeof(buf), f->pz,
                            DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &none, &lctx[0], &rctx, &len,
                            &addr), DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));
  for (int i = 0; i < 2; i++)
    assert_dat(dat_lmr_free(lmr[i]), DAT_SUCCESS);
}

static void
test_lmr_of_lmr(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an LMR made from another (DAT_MEM_TYPE_LMR) covers the same memory in its own "
                 "zone with its own privileges and keys, outlives the first, and takes the peer's "
                 "RDMA Write; a freed or non-LMR handle is refused");
  DAT_PROVIDER_ATTR pr_attr;
  assert_dat(dat_ia_query(f->ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_LMR_MEM_TYPE_SUPPORTED,
                          &pr_attr), DAT_SUCCESS);
  g_assert_cmphex(pr_attr.lmr_mem_types_supported & DAT_MEM_TYPE_LMR, ==, DAT_MEM_TYPE_LMR);
  static char buf[128];
  DAT_PZ_HANDLE pz2;
  assert_dat(dat_pz_create(f->ia, &pz2), DAT_SUCCESS);
  DAT_REGION_DESCRIPTION region = { .for_va = buf };
  DAT_LMR_HANDLE first, second;
  DAT_LMR_CONTEXT lctx1, lctx2;
  DAT_RMR_CONTEXT rctx1, rctx2;
  DAT_VLEN len;
  DAT_VADDR addr;
  assert_dat(dat_lmr_create(f->ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(buf), pz2,
                            DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG,
                            DAT_VA_TYPE_VA, &first, &lctx1, &rctx1, &len, &addr), DAT_SUCCESS);
  /* The length is the first LMR's, whatever is given. */
  DAT_REGION_DESCRIPTION of_first = { .for_lmr_handle = first };
  assert_dat(dat_lmr_create(f->ia, DAT_MEM_TYPE_LMR, of_first, 1, f->pz, DAT_MEM_PRIV_ALL_FLAG,
                            DAT_VA_TYPE_VA, &second, &lctx2, &rctx2, &len, &addr), DAT_SUCCESS);
  g_assert_true(second != first);
  g_assert_cmpuint(lctx2, !=, lctx1);
  g_assert_cmpuint(rctx2, !=, rctx1);
  g_assert_cmpuint(len, ==, sizeof(buf));
  g_assert_cmpuint(addr, ==, (DAT_VADDR) (uintptr_t) buf);
  DAT_LMR_PARAM lp;
  assert_dat(dat_lmr_query(second, DAT_LMR_FIELD_ALL, &lp), DAT_SUCCESS);
  g_assert_cmpint(lp.mem_type, ==, DAT_MEM_TYPE_LMR);
  g_assert_true(lp.region_desc.for_lmr_handle == first);
  g_assert_true(lp.pz_handle == f->pz);
  g_assert_cmphex(lp.mem_priv, ==, DAT_MEM_PRIV_ALL_FLAG);
  g_assert_cmpuint(lp.length, ==, sizeof(buf));
  g_assert_cmpuint(lp.rmr_context, ==, rctx2);

  /* The second LMR stays when the first goes, and the peer writes
   * through its rmr_context. */
  assert_dat(dat_lmr_free(first), DAT_SUCCESS);
  DAT_LMR_HANDLE none;
  assert_dat(dat_lmr_create(f->ia, DAT_MEM_TYPE_LMR, of_first, 0, f->pz, DAT_MEM_PRIV_ALL_FLAG,
                            DAT_VA_TYPE_VA, &none, &lctx1, &rctx1, &len, &addr),
             DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_LMR));
  DAT_REGION_DESCRIPTION of_pz = { .for_lmr_handle = (DAT_LMR_HANDLE) pz2 };
  assert_dat(dat_lmr_create(f->ia, DAT_MEM_TYPE_LMR, of_pz, 0, f->pz, DAT_MEM_PRIV_ALL_FLAG,
                            DAT_VA_TYPE_VA, &none, &lctx1, &rctx1, &len, &addr),
             DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_LMR));
  pair_t p;
  pair_connect(f, &p);
  static char src[16] = "through LMR 2";
  reg_t sr;
  reg_make(f, src, sizeof(src), &sr);
  memset(buf, 0, sizeof(buf));
  g_assert_cmpint(write_status(p.c_ep, p.c_dto, &sr.iov, rctx2, (DAT_VADDR) (uintptr_t) (buf + 8)),
                  ==, DAT_DTO_SUCCESS);
  /* Over iWARP the Write completes once sent (RFC 5040): the Read behind
   * it on the same connection completes only after it was placed (and
   * orders the placement before the checks, where polling the memory
   * would race the progress thread's write). */
  static char back[16];
  reg_t bk;
  reg_make(f, back, sizeof(back), &bk);
  DAT_RMR_TRIPLET remote = { .rmr_context = rctx2, .virtual_address = (DAT_VADDR) (uintptr_t) (buf + 8),
                             .segment_length = sizeof(back) };
  DAT_DTO_COOKIE rc = { .as_64 = 0x99 };
  assert_dat(dat_ep_post_rdma_read(p.c_ep, 1, &bk.iov, rc, &remote, DAT_COMPLETION_DEFAULT_FLAG),
             DAT_SUCCESS);
  DAT_EVENT rev;
  wait_event(p.c_dto, &rev);
  g_assert_cmpint(rev.event_data.dto_completion_event_data.status, ==, DAT_DTO_SUCCESS);
  g_assert_cmpint(rev.event_data.dto_completion_event_data.operation, ==, DAT_DTO_RDMA_READ);
  g_assert_cmpmem(back, sizeof(src), src, sizeof(src));
  g_assert_cmpmem(buf + 8, sizeof(src), src, sizeof(src));
  /* Its lmr_context serves a local post too. */
  DAT_LMR_TRIPLET iov = { .virtual_address = (DAT_VADDR) (uintptr_t) buf,
                          .segment_length = sizeof(buf), .lmr_context = lctx2 };
  assert_dat(dat_lmr_sync_rdma_read(f->ia, &iov, 1), DAT_SUCCESS);
  assert_dat(dat_ep_disconnect(p.c_ep, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  DAT_EVENT ev;
  wait_event_of(p.c_conn, DAT_CONNECTION_EVENT_DISCONNECTED, &ev);
  /* The fixture's abrupt close frees the rest. */
}

#define RMR_STALE DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RMR)

static void
test_rmr_stale(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a freed RMR's handle is refused by every RMR call and is not handed out again");
  DAT_RMR_HANDLE rmr, again;
  DAT_RMR_SCOPE scope;
  rmr_make(f, &rmr, &scope);
  assert_dat(dat_rmr_free(rmr), DAT_SUCCESS);
  DAT_RMR_PARAM rp;
  assert_dat(dat_rmr_query(rmr, DAT_RMR_FIELD_ALL, &rp), RMR_STALE);
  assert_dat(dat_rmr_free(rmr), RMR_STALE);
  DAT_LMR_TRIPLET none = { 0 };
  DAT_RMR_COOKIE rc = { .as_64 = 1 };
  DAT_RMR_CONTEXT ctx;
  assert_dat(dat_rmr_bind(rmr, DAT_HANDLE_NULL, &none, 0, DAT_VA_TYPE_VA, DAT_HANDLE_NULL, rc,
                          DAT_COMPLETION_DEFAULT_FLAG, &ctx), RMR_STALE);
  DAT_HANDLE_TYPE ht;
  g_assert_cmphex(DAT_GET_TYPE(dat_get_handle_type(rmr, &ht)), ==, DAT_INVALID_HANDLE);
  /* Another type's handle is no RMR. */
  assert_dat(dat_rmr_free(f->pz), RMR_STALE);
  rmr_make(f, &again, &scope);
  g_assert_true(again != rmr);
  /* An RMR made on the zone keeps it. */
  assert_dat(dat_pz_free(f->pz), DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_PZ_IN_USE));
  assert_dat(dat_rmr_free(again), DAT_SUCCESS);
}

#define CSP_STALE DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CSP)

static void
test_csp(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("dat_ep_common_connect reaches a CSP listening on the IA's address and a port: "
                 "the request names the CSP, is accepted, and both EPs connect; a freed CSP is "
                 "refused");
  DAT_PZ_PARAM pp;
  assert_dat(dat_pz_query(f->pz, DAT_PZ_FIELD_ALL, &pp), DAT_SUCCESS);
  DAT_IA_HANDLE ia = pp.ia_handle; /* the provider's (libdat2 wraps IA handles) */
  DAT_IA_ATTR ia_attr;
  assert_dat(dat_ia_query(f->ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, 0, NULL), DAT_SUCCESS);
  DAT_EVD_HANDLE cr_evd, dto, s_conn, c_conn;
  assert_dat(dat_evd_create(f->ia, 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &s_conn), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &c_conn), DAT_SUCCESS);
  DAT_EP_HANDLE s_ep, c_ep;
  assert_dat(dat_ep_create(f->ia, f->pz, dto, dto, s_conn, NULL, &s_ep), DAT_SUCCESS);
  assert_dat(dat_ep_create(f->ia, f->pz, dto, dto, c_conn, NULL, &c_ep), DAT_SUCCESS);
  struct sockaddr_in addr;
  memcpy(&addr, ia_attr.ia_address_ptr, sizeof(addr));
  addr.sin_port = htons((uint16_t) (20000 + getpid() % 20000));
  DAT_COMM comm = { .domain = AF_INET, .type = SOCK_STREAM, .protocol = 0 };
  DAT_COMM bad = { .domain = AF_UNIX, .type = SOCK_STREAM, .protocol = 0 };
  DAT_CSP_HANDLE csp;
  assert_dat(prov_of(ia)->csp_create_func(ia, &bad, (DAT_IA_ADDRESS_PTR) &addr, cr_evd, &csp),
             DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2));
  /* Another process may hold the port: take the next. */
  DAT_RETURN ret;
  while ((ret = prov_of(ia)->csp_create_func(ia, &comm, (DAT_IA_ADDRESS_PTR) &addr, cr_evd, &csp)) !=
         DAT_SUCCESS) {
    g_assert_cmphex(DAT_GET_TYPE(ret), ==, DAT_CONN_QUAL_IN_USE);
    addr.sin_port = htons((uint16_t) (20000 + (ntohs(addr.sin_port) - 20000 + 1) % 20000));
  }
  DAT_HANDLE_TYPE ht;
  assert_dat(dat_get_handle_type(csp, &ht), DAT_SUCCESS);
  g_assert_cmpint(ht, ==, DAT_HANDLE_TYPE_CSP);
  DAT_CSP_PARAM cp;
  assert_dat(prov_of(csp)->csp_query_func(csp, DAT_CSP_FIELD_ALL, &cp), DAT_SUCCESS);
  g_assert_true(cp.evd_handle == cr_evd);
  g_assert_cmpint(cp.comm->domain, ==, AF_INET);
  g_assert_cmpuint(((struct sockaddr_in *) cp.address_ptr)->sin_port, ==, addr.sin_port);
  /* A CSP is no PSP. */
  assert_dat(dat_psp_free(csp), DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PSP));
  assert_dat(prov_of(c_ep)->ep_common_connect_func(c_ep, (DAT_IA_ADDRESS_PTR) &addr,
                                                    10 * 1000 * 1000, 0, NULL), DAT_SUCCESS);
  DAT_EVENT ev;
  wait_event(cr_evd, &ev);
  g_assert_cmphex(ev.event_number, ==, DAT_CONNECTION_REQUEST_EVENT);
  g_assert_true(ev.event_data.cr_arrival_event_data.sp_handle.csp_handle == csp);
  g_assert_cmpuint(ev.event_data.cr_arrival_event_data.conn_qual, ==, ntohs(addr.sin_port));
  assert_dat(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, s_ep, 0, NULL),
             DAT_SUCCESS);
  wait_event(s_conn, &ev);
  g_assert_cmphex(ev.event_number, ==, DAT_CONNECTION_EVENT_ESTABLISHED);
  wait_event(c_conn, &ev);
  g_assert_cmphex(ev.event_number, ==, DAT_CONNECTION_EVENT_ESTABLISHED);
  assert_dat(prov_of(csp)->csp_free_func(csp), DAT_SUCCESS);
  assert_dat(prov_of(csp)->csp_free_func(csp), CSP_STALE);
  assert_dat(prov_of(csp)->csp_query_func(csp, DAT_CSP_FIELD_ALL, &cp), CSP_STALE);
}

static void
test_dup_connect(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("dat_ep_dup_connect connects to the service point another EP connected to; a "
                 "passive or freed EP names none");
  DAT_IA_ATTR ia_attr;
  assert_dat(dat_ia_query(f->ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, 0, NULL), DAT_SUCCESS);
  DAT_EVD_HANDLE cr_evd, dto, s_conn, c_conn;
  assert_dat(dat_evd_create(f->ia, 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &s_conn), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &c_conn), DAT_SUCCESS);
  DAT_EP_HANDLE s_ep[2], c_ep[2], gone;
  for (int i = 0; i < 2; i++) {
    assert_dat(dat_ep_create(f->ia, f->pz, dto, dto, s_conn, NULL, &s_ep[i]), DAT_SUCCESS);
    assert_dat(dat_ep_create(f->ia, f->pz, dto, dto, c_conn, NULL, &c_ep[i]), DAT_SUCCESS);
  }
  assert_dat(dat_ep_create(f->ia, f->pz, dto, dto, c_conn, NULL, &gone), DAT_SUCCESS);
  assert_dat(dat_ep_free(gone), DAT_SUCCESS);
  DAT_PSP_HANDLE psp;
  DAT_CONN_QUAL qual = 0;
  assert_dat(dat_psp_create_any(f->ia, &qual, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), DAT_SUCCESS);
  /* Not connected yet: no remote service point to duplicate. */
  assert_dat(dat_ep_dup_connect(c_ep[1], c_ep[0], 1000000, 0, NULL, DAT_QOS_BEST_EFFORT),
             DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED));
  assert_dat(dat_ep_dup_connect(c_ep[1], gone, 1000000, 0, NULL, DAT_QOS_BEST_EFFORT),
             DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP));
  DAT_EVENT ev;
  for (int i = 0; i < 2; i++) {
    if (i == 0)
      assert_dat(dat_ep_connect(c_ep[0], ia_attr.ia_address_ptr, qual, 10 * 1000 * 1000, 0, NULL,
                                DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG), DAT_SUCCESS);
    else
      assert_dat(dat_ep_dup_connect(c_ep[1], c_ep[0], 10 * 1000 * 1000, 0, NULL,
                                    DAT_QOS_BEST_EFFORT), DAT_SUCCESS);
    wait_event(cr_evd, &ev);
    g_assert_cmphex(ev.event_number, ==, DAT_CONNECTION_REQUEST_EVENT);
    g_assert_cmpuint(ev.event_data.cr_arrival_event_data.conn_qual, ==, qual);
    assert_dat(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, s_ep[i], 0, NULL),
               DAT_SUCCESS);
    wait_event(s_conn, &ev);
    g_assert_cmphex(ev.event_number, ==, DAT_CONNECTION_EVENT_ESTABLISHED);
    wait_event(c_conn, &ev);
    g_assert_cmphex(ev.event_number, ==, DAT_CONNECTION_EVENT_ESTABLISHED);
    g_assert_true(ev.event_data.connect_event_data.ep_handle == c_ep[i]);
  }
  DAT_EP_PARAM p0, p1;
  assert_dat(dat_ep_query(c_ep[0], DAT_EP_FIELD_ALL, &p0), DAT_SUCCESS);
  assert_dat(dat_ep_query(c_ep[1], DAT_EP_FIELD_ALL, &p1), DAT_SUCCESS);
  g_assert_cmpint(p1.ep_state, ==, DAT_EP_STATE_CONNECTED);
  g_assert_cmpuint(p1.remote_port_qual, ==, p0.remote_port_qual);
  /* The passive side connected to no service point of its peer. */
  DAT_EP_HANDLE extra;
  assert_dat(dat_ep_create(f->ia, f->pz, dto, dto, c_conn, NULL, &extra), DAT_SUCCESS);
  assert_dat(dat_ep_dup_connect(extra, s_ep[0], 1000000, 0, NULL, DAT_QOS_BEST_EFFORT),
             DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED));
  assert_dat(dat_ep_free(extra), DAT_SUCCESS);
  assert_dat(dat_psp_free(psp), DAT_SUCCESS);
}

static void
test_psp_provider_flag(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a PSP with DAT_PSP_PROVIDER_FLAG gives each request an EP the provider made, "
                 "named by the CR and unconfigured until dat_ep_modify gives it a zone and EVDs; "
                 "accepted on, it carries the connection; a rejected request's EP is freed; an "
                 "unknown flag is DAT_INVALID_PARAMETER");
  DAT_PROVIDER_ATTR pr_attr;
  assert_dat(dat_ia_query(f->ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_EP_CREATOR, &pr_attr),
             DAT_SUCCESS);
  g_assert_cmpint(pr_attr.ep_creator, ==, DAT_PSP_CREATES_EP_IFASKED);
  DAT_EVD_HANDLE cr_evd, sdto, sconn, cdto, cconn;
  assert_dat(dat_evd_create(f->ia, 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &sdto), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 4, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &sconn), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &cdto), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 4, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &cconn), DAT_SUCCESS);
  DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
  DAT_CONN_QUAL q = 0;
  assert_dat(dat_psp_create(f->ia, 1, cr_evd, (DAT_PSP_FLAGS) 0x80, &psp),
             DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4));
  assert_dat(dat_psp_create_any(f->ia, &q, cr_evd, DAT_PSP_PROVIDER_FLAG, &psp), DAT_SUCCESS);
  DAT_PSP_PARAM pp;
  assert_dat(dat_psp_query(psp, DAT_PSP_FIELD_ALL, &pp), DAT_SUCCESS);
  g_assert_cmpint(pp.psp_flags, ==, DAT_PSP_PROVIDER_FLAG);

  DAT_IA_ATTR attr;
  assert_dat(dat_ia_query(f->ia, NULL, DAT_IA_FIELD_IA_ADDRESS_PTR, &attr, 0, NULL), DAT_SUCCESS);
  DAT_EP_HANDLE cep, cep2;
  assert_dat(dat_ep_create(f->ia, f->pz, cdto, cdto, cconn, NULL, &cep), DAT_SUCCESS);
  assert_dat(dat_ep_create(f->ia, f->pz, cdto, cdto, cconn, NULL, &cep2), DAT_SUCCESS);
  assert_dat(dat_ep_connect(cep, attr.ia_address_ptr, q, DAT_TIMEOUT_INFINITE, 0, NULL,
                            DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG), DAT_SUCCESS);
  DAT_EVENT ev;
  wait_event_of(cr_evd, DAT_CONNECTION_REQUEST_EVENT, &ev);
  DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
  g_assert_true(ev.event_data.cr_arrival_event_data.sp_handle.psp_handle == psp);
  DAT_CR_PARAM cp;
  assert_dat(dat_cr_query(cr, DAT_CR_FIELD_LOCAL_EP_HANDLE, &cp), DAT_SUCCESS);
  DAT_EP_HANDLE sep = cp.local_ep_handle;
  g_assert_nonnull(sep);
  DAT_HANDLE_TYPE type;
  assert_dat(dat_get_handle_type(sep, &type), DAT_SUCCESS);
  g_assert_cmpint(type, ==, DAT_HANDLE_TYPE_EP);
  DAT_EP_STATE state;
  assert_dat(dat_ep_get_status(sep, &state, NULL, NULL), DAT_SUCCESS);
  g_assert_cmpint(state, ==, DAT_EP_STATE_UNCONFIGURED_TENTATIVE);

  /* Unconfigured, it takes no receive and no accept; the CR stays. */
  static char rbuf[64], sbuf[64] = "on the provider's EP";
  reg_t rr, sr;
  reg_make(f, rbuf, sizeof(rbuf), &rr);
  reg_make(f, sbuf, sizeof(sbuf), &sr);
  DAT_DTO_COOKIE rc = { .as_64 = 5 };
  assert_dat(dat_ep_post_recv(sep, 1, &rr.iov, rc, DAT_COMPLETION_DEFAULT_FLAG),
             DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONFTENTATIVE));
  assert_dat(dat_cr_accept(cr, DAT_HANDLE_NULL, 0, NULL),
             DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONFTENTATIVE));
  DAT_EP_PARAM epp;
  memset(&epp, 0, sizeof(epp));
  assert_dat(dat_ep_modify(sep, DAT_EP_FIELD_RECV_EVD_HANDLE, &epp),
             DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));
  epp.pz_handle = f->pz;
  epp.recv_evd_handle = sdto;
  epp.request_evd_handle = sdto;
  epp.connect_evd_handle = sconn;
  epp.ep_attr.max_recv_dtos = 4;
  assert_dat(dat_ep_modify(sep, DAT_EP_FIELD_PZ_HANDLE | DAT_EP_FIELD_RECV_EVD_HANDLE |
                                DAT_EP_FIELD_REQUEST_EVD_HANDLE | DAT_EP_FIELD_CONNECT_EVD_HANDLE |
                                DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, &epp), DAT_SUCCESS);
  assert_dat(dat_ep_query(sep, DAT_EP_FIELD_ALL, &epp), DAT_SUCCESS);
  g_assert_true(epp.pz_handle == f->pz);
  g_assert_true(epp.recv_evd_handle == sdto);
  g_assert_true(epp.connect_evd_handle == sconn);
  g_assert_cmpint(epp.ep_attr.max_recv_dtos, ==, 4);
  g_assert_cmpint(epp.ep_state, ==, DAT_EP_STATE_UNCONNECTED);
  /* The zone and EVDs are used: their frees are refused. */
  assert_dat(dat_evd_free(sconn), DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE));
  assert_dat(dat_ep_post_recv(sep, 1, &rr.iov, rc, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  assert_dat(dat_cr_accept(cr, DAT_HANDLE_NULL, 0, NULL), DAT_SUCCESS);
  wait_event_of(sconn, DAT_CONNECTION_EVENT_ESTABLISHED, &ev);
  g_assert_true(ev.event_data.connect_event_data.ep_handle == sep);
  wait_event_of(cconn, DAT_CONNECTION_EVENT_ESTABLISHED, &ev);
  DAT_DTO_COOKIE sc = { .as_64 = 6 };
  assert_dat(dat_ep_post_send(cep, 1, &sr.iov, sc, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  wait_event_of(sdto, DAT_DTO_COMPLETION_EVENT, &ev);
  g_assert_true(ev.event_data.dto_completion_event_data.ep_handle == sep);
  g_assert_cmpuint(ev.event_data.dto_completion_event_data.user_cookie.as_64, ==, 5);
  g_assert_cmpint(ev.event_data.dto_completion_event_data.status, ==, DAT_DTO_SUCCESS);
  g_assert_cmpstr(rbuf, ==, sbuf);

  /* A rejected request takes its EP with it. */
  assert_dat(dat_ep_connect(cep2, attr.ia_address_ptr, q, DAT_TIMEOUT_INFINITE, 0, NULL,
                            DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG), DAT_SUCCESS);
  wait_event_of(cr_evd, DAT_CONNECTION_REQUEST_EVENT, &ev);
  cr = ev.event_data.cr_arrival_event_data.cr_handle;
  assert_dat(dat_cr_query(cr, DAT_CR_FIELD_LOCAL_EP_HANDLE, &cp), DAT_SUCCESS);
  DAT_EP_HANDLE sep2 = cp.local_ep_handle;
  g_assert_true(sep2 != sep);
  assert_dat(dat_cr_reject(cr, 0, NULL), DAT_SUCCESS);
  assert_dat(dat_ep_get_status(sep2, &state, NULL, NULL),
             DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP));
  wait_event(cconn, &ev);
  g_assert_true(ev.event_number == DAT_CONNECTION_EVENT_PEER_REJECTED ||
                ev.event_number == DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
  assert_dat(dat_ep_disconnect(cep, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  wait_event_of(cconn, DAT_CONNECTION_EVENT_DISCONNECTED, &ev);
  /* The fixture's abrupt close frees the rest. */
}

/* The counts of dat_ep_recv_query, both of which must be @p want. */
static void
assert_recvs(DAT_EP_HANDLE ep, DAT_COUNT want)
{
  DAT_COUNT n = -7, span = -7;
  assert_dat(dat_ep_recv_query(ep, &n, &span), DAT_SUCCESS);
  g_assert_cmpint(n, ==, want);
  g_assert_cmpint(span, ==, want);
  /* dat_ep_get_status's receive side says the same. */
  DAT_BOOLEAN recv_idle = 7, request_idle = 7;
  assert_dat(dat_ep_get_status(ep, NULL, &recv_idle, &request_idle), DAT_SUCCESS);
  g_assert_cmpint(recv_idle, ==, want == 0 ? DAT_TRUE : DAT_FALSE);
  g_assert_cmpint(request_idle, ==, DAT_FALSE);
}

static void
test_ep_recv_query(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("dat_ep_recv_query counts the receives posted to an EP and not yet completed: up "
                 "with each post, down with the completion of the peer's Send and with each "
                 "flush, and dat_ep_get_status says the receive side is idle when none is left; "
                 "an EP with an SRQ answers DAT_VALUE_UNKNOWN");
  DAT_PROVIDER_ATTR pr_attr;
  DAT_IA_ATTR ia_attr;
  assert_dat(dat_ia_query(f->ia, NULL, 0, &ia_attr, DAT_PROVIDER_FIELD_EP_RECV_INFO_SUPPORTED,
                          &pr_attr), DAT_SUCCESS);
  g_assert_cmphex(pr_attr.ep_recv_info_supported, ==, 0x11);
  pair_t p;
  pair_connect(f, &p);
  static char rbuf[3][64], sbuf[64] = "counted";
  reg_t r[3], sr;
  for (int i = 0; i < 3; i++)
    reg_make(f, rbuf[i], sizeof(rbuf[i]), &r[i]);
  reg_make(f, sbuf, sizeof(sbuf), &sr);
  assert_recvs(p.s_ep, 0);
  for (int i = 0; i < 3; i++) {
    DAT_DTO_COOKIE c = { .as_64 = 100 + (DAT_UINT64) i };
    assert_dat(dat_ep_post_recv(p.s_ep, 1, &r[i].iov, c, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    assert_recvs(p.s_ep, i + 1);
  }
  /* NULL outputs are allowed. */
  assert_dat(dat_ep_recv_query(p.s_ep, NULL, NULL), DAT_SUCCESS);
  assert_recvs(p.c_ep, 0);

  DAT_DTO_COOKIE sc = { .as_64 = 7 };
  assert_dat(dat_ep_post_send(p.c_ep, 1, &sr.iov, sc, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  DAT_EVENT ev;
  wait_event_of(p.s_dto, DAT_DTO_COMPLETION_EVENT, &ev);
  g_assert_cmpint(ev.event_data.dto_completion_event_data.operation, ==, DAT_DTO_RECEIVE);
  g_assert_cmpuint(ev.event_data.dto_completion_event_data.user_cookie.as_64, ==, 100);
  g_assert_cmpint(ev.event_data.dto_completion_event_data.status, ==, DAT_DTO_SUCCESS);
  assert_recvs(p.s_ep, 2);
  wait_event_of(p.c_dto, DAT_DTO_COMPLETION_EVENT, &ev);

  /* The disconnect flushes the other two. */
  assert_dat(dat_ep_disconnect(p.c_ep, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  wait_event_of(p.s_conn, DAT_CONNECTION_EVENT_DISCONNECTED, &ev);
  for (int i = 1; i < 3; i++) {
    wait_event_of(p.s_dto, DAT_DTO_COMPLETION_EVENT, &ev);
    g_assert_cmpint(ev.event_data.dto_completion_event_data.status, ==, DAT_DTO_ERR_FLUSHED);
    assert_recvs(p.s_ep, 2 - i);
  }

  /* An EP taking its receives from an SRQ cannot tell. */
  DAT_SRQ_ATTR sa = { .max_recv_dtos = 4, .max_recv_iov = 1, .low_watermark = DAT_SRQ_LW_DEFAULT };
  DAT_SRQ_HANDLE srq;
  assert_dat(dat_srq_create(f->ia, f->pz, &sa, &srq), DAT_SUCCESS);
  DAT_EP_HANDLE sep;
  DAT_EP_PARAM ep_param;
  assert_dat(dat_ep_query(p.s_ep, DAT_EP_FIELD_EP_ATTR_ALL, &ep_param), DAT_SUCCESS);
  assert_dat(dat_ep_create_with_srq(f->ia, f->pz, p.s_dto, p.s_dto, p.s_conn, srq,
                                    &ep_param.ep_attr, &sep), DAT_SUCCESS);
  assert_recvs(sep, DAT_VALUE_UNKNOWN);
  assert_dat(dat_ep_free(sep), DAT_SUCCESS);
  assert_dat(dat_ep_recv_query(sep, NULL, NULL), DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP));
  /* The fixture's abrupt close frees the rest. */
}

static void
test_ep_set_watermark(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("dat_ep_set_watermark takes DAT_WATERMARK_INFINITE, the default, and refuses a "
                 "finite watermark as DAT_MODEL_NOT_SUPPORTED: IT-API reports no buffer taken from "
                 "an SRQ and raises no broken connection for a consumer");
  DAT_EVD_HANDLE dto, conn;
  assert_dat(dat_evd_create(f->ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn), DAT_SUCCESS);
  DAT_EP_HANDLE ep;
  assert_dat(dat_ep_create(f->ia, f->pz, dto, dto, conn, NULL, &ep), DAT_SUCCESS);
  DAT_EP_PARAM p;
  const DAT_EP_PARAM_MASK hw = DAT_EP_FIELD_EP_ATTR_SRQ_SOFT_HW;
  assert_dat(dat_ep_query(ep, hw, &p), DAT_SUCCESS);
  g_assert_cmpint(p.ep_attr.srq_soft_hw, ==, DAT_WATERMARK_INFINITE);
  assert_dat(dat_ep_set_watermark(ep, DAT_WATERMARK_INFINITE, DAT_WATERMARK_INFINITE), DAT_SUCCESS);
  g_assert_cmphex(DAT_GET_TYPE(dat_ep_set_watermark(ep, 4, DAT_WATERMARK_INFINITE)), ==,
                  DAT_MODEL_NOT_SUPPORTED);
  g_assert_cmphex(DAT_GET_TYPE(dat_ep_set_watermark(ep, DAT_WATERMARK_INFINITE, 8)), ==,
                  DAT_MODEL_NOT_SUPPORTED);
  assert_dat(dat_ep_set_watermark(ep, -5, DAT_WATERMARK_INFINITE),
             DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2));
  assert_dat(dat_ep_set_watermark(ep, DAT_WATERMARK_INFINITE, -5),
             DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));
  assert_dat(dat_ep_query(ep, hw, &p), DAT_SUCCESS);
  g_assert_cmpint(p.ep_attr.srq_soft_hw, ==, DAT_WATERMARK_INFINITE);
  assert_dat(dat_ep_free(ep), DAT_SUCCESS);
  assert_dat(dat_ep_set_watermark(ep, DAT_WATERMARK_INFINITE, DAT_WATERMARK_INFINITE),
             DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP));
  assert_dat(dat_evd_free(dto), DAT_SUCCESS);
  assert_dat(dat_evd_free(conn), DAT_SUCCESS);
}

static void
test_ep_modify(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("dat_ep_modify changes the RDMA Read depths, accepts fields named unchanged and "
                 "refuses what IT-API cannot change");
  DAT_EVD_HANDLE dto, conn;
  assert_dat(dat_evd_create(f->ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto), DAT_SUCCESS);
  assert_dat(dat_evd_create(f->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn), DAT_SUCCESS);
  DAT_EP_HANDLE ep, gone;
  assert_dat(dat_ep_create(f->ia, f->pz, dto, dto, conn, NULL, &ep), DAT_SUCCESS);
  assert_dat(dat_ep_create(f->ia, f->pz, dto, dto, conn, NULL, &gone), DAT_SUCCESS);
  assert_dat(dat_ep_free(gone), DAT_SUCCESS);
  DAT_EP_PARAM p;
  assert_dat(dat_ep_query(ep, DAT_EP_FIELD_ALL, &p), DAT_SUCCESS);
  const DAT_EP_PARAM_MASK settable = DAT_EP_FIELD_ALL & ~(DAT_EP_FIELD_IA_HANDLE |
    DAT_EP_FIELD_EP_STATE | DAT_EP_FIELD_COMM | DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR |
    DAT_EP_FIELD_LOCAL_PORT_QUAL | DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR |
    DAT_EP_FIELD_REMOTE_PORT_QUAL);
  assert_dat(dat_ep_modify(ep, settable, &p), DAT_SUCCESS);
  assert_dat(dat_ep_modify(ep, DAT_EP_FIELD_EP_STATE, &p),
             DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2));
  DAT_EP_PARAM want = p;
  want.ep_attr.max_rdma_read_in = 2;
  want.ep_attr.max_rdma_read_out = 1;
  assert_dat(dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN |
                                   DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT, &want), DAT_SUCCESS);
  assert_dat(dat_ep_query(ep, DAT_EP_FIELD_EP_ATTR_ALL, &p), DAT_SUCCESS);
  g_assert_cmpint(p.ep_attr.max_rdma_read_in, ==, 2);
  g_assert_cmpint(p.ep_attr.max_rdma_read_out, ==, 1);
  want.ep_attr.max_recv_dtos = p.ep_attr.max_recv_dtos + 1;
  assert_dat(dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, &want),
             DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));
  want.recv_evd_handle = conn;
  assert_dat(dat_ep_modify(ep, DAT_EP_FIELD_RECV_EVD_HANDLE, &want),
             DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));
  assert_dat(dat_ep_modify(gone, DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN, &want),
             DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP));
  assert_dat(dat_ep_free(ep), DAT_SUCCESS);
  assert_dat(dat_evd_free(dto), DAT_SUCCESS);
  assert_dat(dat_evd_free(conn), DAT_SUCCESS);
}

/* The objects one round of /dat/handle/free-race races: a PZ, an EVD and
 * a CNO that the freeing thread frees while the creating thread makes
 * objects on them. */
typedef struct {
  DAT_IA_HANDLE ia;
  DAT_PZ_HANDLE pz;
  DAT_EVD_HANDLE evd;
  DAT_CNO_HANDLE cno;
  gint creates;  /* iterations of the creating thread (atomic) */
  gint freed;    /* the freeing thread is done: all three are freed (atomic) */
} race_t;

#define PZ_GONE DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ)

/* @p ret is DAT_SUCCESS or @p refused; TRUE on success. */
static gboolean
race_ok(DAT_RETURN ret, DAT_RETURN refused)
{
  if (ret != DAT_SUCCESS)
    assert_dat(ret, refused);
  return ret == DAT_SUCCESS;
}

/* Makes and frees objects that use the PZ, the EVD or the CNO until all
 * three are freed, then once more, every create then refused. */
static gpointer
race_create(gpointer data)
{
  race_t *r = data;
  static char buf[4096];
  DAT_REGION_DESCRIPTION region = { .for_va = buf };
  DAT_EP_ATTR ea = { .service_type = DAT_SERVICE_TYPE_RC, .max_request_dtos = 4,
                     .max_recv_dtos = 4, .max_request_iov = 1, .max_recv_iov = 1 };
  DAT_SRQ_ATTR sa = { .max_recv_dtos = 8, .max_recv_iov = 1, .low_watermark = DAT_SRQ_LW_DEFAULT };
  gboolean last = FALSE;
  do {
    last = g_atomic_int_get(&r->freed);
    DAT_EP_HANDLE ep;
    DAT_RETURN ret = dat_ep_create(r->ia, r->pz, r->evd, r->evd, r->evd, &ea, &ep);
    /* The PZ is looked at first, then the receive EVD. */
    if (ret != DAT_SUCCESS && ret != PZ_GONE)
      assert_dat(ret, DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_RECV));
    if (ret == DAT_SUCCESS)
      assert_dat(dat_ep_free(ep), DAT_SUCCESS);
    DAT_LMR_HANDLE lmr;
    DAT_LMR_CONTEXT lctx;
    DAT_RMR_CONTEXT rctx;
    if (race_ok(dat_lmr_create(r->ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(buf), r->pz,
                               DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr, &lctx, &rctx, NULL,
                               NULL), PZ_GONE))
      assert_dat(dat_lmr_free(lmr), DAT_SUCCESS);
    DAT_SRQ_HANDLE srq;
    if (race_ok(dat_srq_create(r->ia, r->pz, &sa, &srq), PZ_GONE))
      assert_dat(dat_srq_free(srq), DAT_SUCCESS);
    DAT_RMR_HANDLE rmr;
    ret = dat_rmr_create(r->pz, &rmr);
    if (ret != DAT_ERR(DAT_MODEL_NOT_SUPPORTED, 0) && race_ok(ret, PZ_GONE))
      assert_dat(dat_rmr_free(rmr), DAT_SUCCESS);
    DAT_PSP_HANDLE psp;
    DAT_CONN_QUAL qual;
    if (race_ok(dat_psp_create_any(r->ia, &qual, r->evd, DAT_PSP_CONSUMER_FLAG, &psp),
                DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CR)))
      assert_dat(dat_psp_free(psp), DAT_SUCCESS);
    DAT_EVD_HANDLE evd;
    if (race_ok(dat_evd_create(r->ia, 4, r->cno, DAT_EVD_DTO_FLAG, &evd),
                DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO)))
      assert_dat(dat_evd_free(evd), DAT_SUCCESS);
    g_atomic_int_inc(&r->creates);
  } while (!last);
  return NULL;
}

/* Frees the PZ, the EVD and the CNO as soon as their users let it. */
static gpointer
race_free(gpointer data)
{
  race_t *r = data;
  gboolean pz = FALSE, evd = FALSE, cno = FALSE;
  while (g_atomic_int_get(&r->creates) < 1)
    g_thread_yield();
  while (!pz || !evd || !cno) {
    if (!pz)
      pz = race_ok(dat_pz_free(r->pz), DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_PZ_IN_USE));
    if (!evd)
      evd = race_ok(dat_evd_free(r->evd),
                    DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE));
    if (!cno)
      cno = race_ok(dat_cno_free(r->cno),
                    DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_IN_USE));
  }
  g_atomic_int_set(&r->freed, 1);
  return NULL;
}

static void
test_free_race(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("a PZ, EVD or CNO freed while another thread makes objects on it is either "
                 "refused as in use or freed, the create then refused as an invalid handle: "
                 "never read after its free");
  DAT_OS_WAIT_PROXY_AGENT agent = DAT_OS_WAIT_PROXY_AGENT_NULL;
  gint64 end = g_get_monotonic_time() + G_USEC_PER_SEC * 3 / 2;
  guint rounds = 0, creates = 0;
  do {
    race_t r = { .ia = f->ia };
    assert_dat(dat_pz_create(f->ia, &r.pz), DAT_SUCCESS);
    assert_dat(dat_evd_create(f->ia, 16, DAT_HANDLE_NULL,
                              DAT_EVD_DTO_FLAG | DAT_EVD_CONNECTION_FLAG | DAT_EVD_CR_FLAG, &r.evd),
               DAT_SUCCESS);
    assert_dat(dat_cno_create(f->ia, agent, &r.cno), DAT_SUCCESS);
    GThread *creator = g_thread_new("race-create", race_create, &r);
    GThread *freer = g_thread_new("race-free", race_free, &r);
    g_thread_join(freer);
    g_thread_join(creator);
    creates += (guint) r.creates;
    rounds++;
    /* Freed, and refused from now on. */
    DAT_PZ_PARAM pp;
    assert_dat(dat_pz_query(r.pz, DAT_PZ_FIELD_ALL, &pp), PZ_GONE);
    assert_dat(dat_pz_free(r.pz), PZ_GONE);
    DAT_EVD_PARAM ep;
    assert_dat(dat_evd_query(r.evd, DAT_EVD_FIELD_ALL, &ep), DAT_ERR(DAT_INVALID_HANDLE, 0));
    assert_dat(dat_cno_free(r.cno), DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO));
  } while (g_get_monotonic_time() < end);
  g_test_message("%u rounds, %u create iterations", rounds, creates);
  /* The adapter is whole: the fixture's zone still takes an LMR. */
  static char buf[64];
  DAT_REGION_DESCRIPTION region = { .for_va = buf };
  DAT_LMR_HANDLE lmr;
  DAT_LMR_CONTEXT lctx;
  DAT_RMR_CONTEXT rctx;
  assert_dat(dat_lmr_create(f->ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(buf), f->pz,
                            DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr, &lctx, &rctx, NULL, NULL),
             DAT_SUCCESS);
  assert_dat(dat_lmr_free(lmr), DAT_SUCCESS);
}

/* A thread posting RDMA Writes while another frees what they name. */
typedef struct {
  DAT_EP_HANDLE ep;
  DAT_EVD_HANDLE dto;     /* the EP's request EVD, or DAT_HANDLE_NULL: no completion to take */
  DAT_LMR_TRIPLET iov;
  DAT_RMR_TRIPLET remote;
  DAT_RETURN gone;        /* the status of a post once the free returned */
  gint freed;             /* the free returned (atomic) */
  guint posted, refused;
} post_race_t;

/* Posts until a post begun after the free is refused with r->gone; a
 * post taken completes. */
static gpointer
race_post(gpointer data)
{
  post_race_t *r = data;
  for (guint64 n = 1;; n++) {
    gboolean after = g_atomic_int_get(&r->freed);
    DAT_DTO_COOKIE cookie = { .as_64 = n };
    DAT_RETURN ret = dat_ep_post_rdma_write(r->ep, 1, &r->iov, cookie, &r->remote,
                                            DAT_COMPLETION_DEFAULT_FLAG);
    if (ret == DAT_SUCCESS) {
      g_assert_false(after);
      g_assert_true(r->dto != DAT_HANDLE_NULL);
      r->posted++;
      /* Its completion, successful or not: the LMR may be freed under it. */
      DAT_EVENT ev;
      DAT_COUNT nmore;
      assert_dat(dat_evd_wait(r->dto, 5 * 1000 * 1000, 1, &ev, &nmore), DAT_SUCCESS);
      g_assert_cmphex(ev.event_number, ==, DAT_DTO_COMPLETION_EVENT);
      g_assert_true(ev.event_data.dto_completion_event_data.ep_handle == r->ep);
      g_assert_cmpuint(ev.event_data.dto_completion_event_data.user_cookie.as_64, ==, n);
      continue;
    }
    r->refused++;
    if (after) {
      assert_dat(ret, r->gone);
      return NULL;
    }
  }
}

/* Runs race_post() on @p r, frees @p obj with @p free_obj after a few
 * posts, tried again while it answers @p busy (DAT_SUCCESS: never). */
static void
post_race_run(post_race_t *r, DAT_RETURN (*free_obj)(DAT_HANDLE), DAT_HANDLE obj, DAT_RETURN busy)
{
  GThread *poster = g_thread_new("race-post", race_post, r);
  g_usleep(2000);
  DAT_RETURN ret;
  while ((ret = free_obj(obj)) == busy && busy != DAT_SUCCESS)
    g_thread_yield();
  assert_dat(ret, DAT_SUCCESS);
  g_atomic_int_set(&r->freed, 1);
  g_thread_join(poster);
}

static void
test_post_free_race(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("an RDMA Write posted while another thread frees its LMR or its EP is taken "
                 "and completes, or is refused: with DAT_PROTECTION_VIOLATION and "
                 "DAT_INVALID_HANDLE_EP once the free returned");
  pair_t p;
  pair_connect(f, &p);
  static char src[4096], dst[4096];
  reg_t s, d;
  reg_make(f, src, sizeof(src), &s);
  reg_make(f, dst, sizeof(dst), &d);
  DAT_LMR_PARAM lp;
  assert_dat(dat_lmr_query(d.lmr, DAT_LMR_FIELD_RMR_CONTEXT, &lp), DAT_SUCCESS);
  DAT_RMR_TRIPLET remote = { .rmr_context = lp.rmr_context,
                             .virtual_address = (DAT_VADDR) (uintptr_t) dst, .segment_length = 64 };
  s.iov.segment_length = 64;

  post_race_t lmr_race = { .ep = p.c_ep, .dto = p.c_dto, .iov = s.iov, .remote = remote,
                           .gone = DAT_ERR(DAT_PROTECTION_VIOLATION, DAT_PROTECTION_READ) };
  post_race_run(&lmr_race, dat_lmr_free, s.lmr, DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_LMR_IN_USE));
  g_test_message("LMR freed: %u Writes taken, %u refused", lmr_race.posted, lmr_race.refused);

  /* An EP never connected: each post is refused, by IT-API until the free
   * and by this layer after. */
  DAT_EP_HANDLE ep;
  assert_dat(dat_ep_create(f->ia, f->pz, p.c_dto, p.c_dto, p.c_conn, NULL, &ep), DAT_SUCCESS);
  d.iov.segment_length = 64;
  post_race_t ep_race = { .ep = ep, .dto = DAT_HANDLE_NULL, .iov = d.iov, .remote = remote,
                          .gone = DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP) };
  post_race_run(&ep_race, dat_ep_free, ep, DAT_SUCCESS);
  g_test_message("EP freed: %u posts refused", ep_race.refused);
  g_assert_cmpuint(ep_race.posted, ==, 0);

  assert_dat(dat_psp_free(p.psp), DAT_SUCCESS);
  assert_dat(dat_ep_free(p.s_ep), DAT_SUCCESS);
  assert_dat(dat_ep_free(p.c_ep), DAT_SUCCESS);
  assert_dat(dat_lmr_free(d.lmr), DAT_SUCCESS);
}

/* The next UD connection event on @p conn: @p want, its extension data of @p type. */
static DAT_IB_EXTENSION_EVENT_DATA
wait_ud_conn(DAT_EVD_HANDLE conn, int want, DAT_IB_EXT_TYPE type, DAT_EP_HANDLE ep, DAT_EVENT *ev)
{
  wait_event_of(conn, (DAT_EVENT_NUMBER) want, ev);
  DAT_IB_EXTENSION_EVENT_DATA x;
  memcpy(&x, ev->event_extension_data, sizeof(x));
  g_assert_true(ev->event_data.connect_event_data.ep_handle == ep);
  g_assert_cmpint(x.type, ==, type);
  return x;
}

/* A datagram of @p len bytes of @p fill from @p from to @p ah, checked
 * where it lands: @p rbuf, the GRH's 40 bytes in front, the receive's
 * length counting them; returns the sender's QPN the receive names. */
static DAT_UINT32
ud_exchange(DAT_EP_HANDLE from, DAT_EVD_HANDLE from_dto, DAT_IB_ADDR_HANDLE *ah, reg_t *src,
            DAT_EVD_HANDLE to_dto, DAT_UINT64 rcookie, const unsigned char *rbuf, DAT_VLEN len,
            unsigned char fill)
{
  memset((void *) (uintptr_t) src->iov.virtual_address, fill, len);
  DAT_LMR_TRIPLET iov = src->iov;
  iov.segment_length = len;
  DAT_DTO_COOKIE ck = { .as_64 = 7 };
  assert_dat(dat_ib_post_send_ud(from, 1, &iov, ah, ck, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  DAT_EVENT ev;
  wait_ext(from_dto, DAT_IB_DTO_SEND_UD, DAT_IB_UD_SEND, 7, &ev);
  DAT_IB_EXTENSION_EVENT_DATA x = wait_ext(to_dto, DAT_IB_DTO_RECV_UD, DAT_IB_UD_RECV, rcookie, &ev);
  g_assert_cmpuint(ev.event_data.dto_completion_event_data.transfered_length, ==, 40 + len);
  for (DAT_VLEN i = 0; i < len; i++)
    g_assert_cmphex(rbuf[40 + i], ==, fill);
  return x.remote_ah.qpn;
}

static void
test_ud(fixture_t *f, gconstpointer data)
{
  (void) data;
  g_test_summary("DAT's IB UD extension: a datagram EP's connect is a service request whose "
                 "reply gives DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED with the remote AH and the "
                 "accept's private data; the accepting EP gets one with the AH back; datagrams "
                 "go both ways, the GRH's 40 bytes in front of the payload; a reject arrives "
                 "with its private data; a connect before the listener is asked again; a "
                 "forged, freed or other EP's AH is refused, those not "
                 "freed go with their EP; a max_message_size past one datagram is cut to "
                 "it; an interface without "
                 "datagrams refuses the EP as DAT_MODEL_NOT_SUPPORTED");
  pair_t p;
  pair_evds_create(f, 0, &p);
  DAT_EP_ATTR ea = { .service_type = (DAT_SERVICE_TYPE) DAT_IB_SERVICE_TYPE_UD,
                     .max_message_size = 256, .max_request_dtos = 8, .max_recv_dtos = 4,
                     .max_request_iov = 1, .max_recv_iov = 1 };
  if (strcmp(prov_attr(f, DAT_IB_ATTR_UD), "TRUE") != 0) {
    g_test_message("%s has no datagrams", provider);
    DAT_RETURN ret = dat_ep_create(f->ia, f->pz, p.s_dto, p.s_dto, p.s_conn, &ea, &p.s_ep);
    g_assert_cmphex(DAT_GET_TYPE(ret), ==, DAT_MODEL_NOT_SUPPORTED);
    goto out_evds;
  }
  assert_dat(dat_ep_create(f->ia, f->pz, p.s_dto, p.s_dto, p.s_conn, &ea, &p.s_ep), DAT_SUCCESS);
  assert_dat(dat_ep_create(f->ia, f->pz, p.c_dto, p.c_dto, p.c_conn, &ea, &p.c_ep), DAT_SUCCESS);
  /* More than one datagram holds is cut to what it holds, not refused. */
  DAT_EP_ATTR big = ea;
  big.max_message_size = 1u << 20;
  DAT_EP_HANDLE big_ep;
  DAT_EP_PARAM bp;
  assert_dat(dat_ep_create(f->ia, f->pz, p.c_dto, p.c_dto, p.c_conn, &big, &big_ep), DAT_SUCCESS);
  assert_dat(dat_ep_query(big_ep, DAT_EP_FIELD_ALL, &bp), DAT_SUCCESS);
  g_assert_cmpuint(bp.ep_attr.max_message_size, >=, 256);
  g_assert_cmpuint(bp.ep_attr.max_message_size, <, 1u << 20);
  assert_dat(dat_ep_free(big_ep), DAT_SUCCESS);
  static unsigned char sbuf[256], rbuf[2][40 + 256];
  reg_t src, rcv;
  reg_make(f, sbuf, sizeof(sbuf), &src);
  reg_make(f, rbuf, sizeof(rbuf), &rcv);
  DAT_LMR_TRIPLET r0 = rcv.iov, r1 = rcv.iov;
  r0.segment_length = r1.segment_length = sizeof(rbuf[0]);
  r1.virtual_address += sizeof(rbuf[0]);
  DAT_DTO_COOKIE k0 = { .as_64 = 100 }, k1 = { .as_64 = 101 };
  assert_dat(dat_ep_post_recv(p.s_ep, 1, &r0, k0, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  assert_dat(dat_ep_post_recv(p.c_ep, 1, &r1, k1, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);

  DAT_IA_ATTR ia_attr;
  assert_dat(dat_ia_query(f->ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, 0, NULL), DAT_SUCCESS);
  DAT_CONN_QUAL qual = 0;
  assert_dat(dat_psp_create_any(f->ia, &qual, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &p.psp), DAT_SUCCESS);
  const unsigned char req[4] = { 0xab, 0xcd, 0x12, 0x34 };
  assert_dat(dat_ep_connect(p.c_ep, ia_attr.ia_address_ptr, qual, 10 * 1000 * 1000, sizeof(req),
                            (DAT_PVOID) req, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
             DAT_SUCCESS);
  DAT_EVENT ev;
  wait_event_of(p.cr_evd, (DAT_EVENT_NUMBER) DAT_IB_UD_CONNECTION_REQUEST_EVENT, &ev);
  g_assert_true(ev.event_data.cr_arrival_event_data.sp_handle.psp_handle == p.psp);
  DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
  DAT_CR_PARAM cp;
  assert_dat(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp), DAT_SUCCESS);
  g_assert_cmpint(cp.private_data_size, ==, sizeof(req));
  g_assert_cmpmem(cp.private_data, sizeof(req), req, sizeof(req));
  assert_dat(dat_cr_accept(cr, p.s_ep, 3, (DAT_PVOID) "xyz"), DAT_SUCCESS);
  DAT_IB_EXTENSION_EVENT_DATA sx = wait_ud_conn(p.s_conn, DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED,
                                                DAT_IB_UD_PASSIVE_REMOTE_AH, p.s_ep, &ev);
  g_assert_nonnull(sx.remote_ah.ah);
  DAT_IB_EXTENSION_EVENT_DATA cx = wait_ud_conn(p.c_conn, DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED,
                                                DAT_IB_UD_REMOTE_AH, p.c_ep, &ev);
  g_assert_nonnull(cx.remote_ah.ah);
  g_assert_cmpint(ev.event_data.connect_event_data.private_data_size, ==, 3);
  g_assert_cmpmem(ev.event_data.connect_event_data.private_data, 3, "xyz", 3);
  /* The private data stays until the consumer frees the "CM" that names it. */
  g_assert_true(cx.context.as_ptr == ev.event_data.connect_event_data.private_data);
  assert_dat(dat_ib_ud_cm_free(p.c_ep, cx.context.as_ptr), DAT_SUCCESS);
  assert_dat(dat_ib_ud_cm_free(p.c_ep, cx.context.as_ptr), DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));
  assert_dat(dat_ib_ud_cm_free(p.s_ep, sx.context.as_ptr), DAT_SUCCESS);
  DAT_EP_STATE state;
  assert_dat(dat_ep_get_status(p.c_ep, &state, NULL, NULL), DAT_SUCCESS);
  g_assert_cmpint(state, ==, DAT_EP_STATE_CONNECTED);

  /* Both ways: the serving EP answers the QPN the receive names. */
  DAT_UINT32 c_qpn = ud_exchange(p.c_ep, p.c_dto, &cx.remote_ah, &src, p.s_dto, 100, rbuf[0], 100, 0x5a);
  g_assert_cmpuint(c_qpn, ==, sx.remote_ah.qpn);
  DAT_UINT32 s_qpn = ud_exchange(p.s_ep, p.s_dto, &sx.remote_ah, &src, p.c_dto, 101, rbuf[1], 50, 0xa5);
  g_assert_cmpuint(s_qpn, ==, cx.remote_ah.qpn);

  /* A UD EP sends datagrams only. */
  DAT_DTO_COOKIE k3 = { .as_64 = 3 };
  g_assert_cmphex(DAT_GET_TYPE(dat_ep_post_send(p.s_ep, 1, &src.iov, k3, DAT_COMPLETION_DEFAULT_FLAG)), ==,
                  DAT_INVALID_PARAMETER);
  /* The AH uses the zone; a forged one and a freed one are refused unread. */
  g_assert_cmphex(DAT_GET_TYPE(dat_pz_free(f->pz)), ==, DAT_INVALID_STATE);
  DAT_IB_ADDR_HANDLE forged = sx.remote_ah;
  forged.ah = (struct ibv_ah *) sbuf;
  DAT_DTO_COOKIE k2 = { .as_64 = 2 };
  assert_dat(dat_ib_post_send_ud(p.s_ep, 1, &src.iov, &forged, k2, DAT_COMPLETION_DEFAULT_FLAG),
             DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4));
  assert_dat(dat_ib_ud_ah_free(p.s_ep, &cx.remote_ah), DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));
  assert_dat(dat_ib_ud_ah_free(p.s_ep, &sx.remote_ah), DAT_SUCCESS);
  assert_dat(dat_ib_post_send_ud(p.s_ep, 1, &src.iov, &sx.remote_ah, k2, DAT_COMPLETION_DEFAULT_FLAG),
             DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4));
  assert_dat(dat_ib_ud_ah_free(p.s_ep, &sx.remote_ah), DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));

  /* A refusal reaches the requester with its private data. */
  assert_dat(dat_ep_connect(p.c_ep, ia_attr.ia_address_ptr, qual, 10 * 1000 * 1000, sizeof(req),
                            (DAT_PVOID) req, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
             DAT_SUCCESS);
  wait_event_of(p.cr_evd, (DAT_EVENT_NUMBER) DAT_IB_UD_CONNECTION_REQUEST_EVENT, &ev);
  assert_dat(dat_cr_reject(ev.event_data.cr_arrival_event_data.cr_handle, 2, (DAT_PVOID) "no"),
             DAT_SUCCESS);
  wait_ud_conn(p.c_conn, DAT_IB_UD_CONNECTION_REJECT_EVENT, DAT_IB_UD_CONNECT_REJECT, p.c_ep, &ev);
  g_assert_cmpint(ev.event_data.connect_event_data.private_data_size, ==, 2);
  g_assert_cmpmem(ev.event_data.connect_event_data.private_data, 2, "no", 2);

  /* A connect to a qualifier nobody serves yet is asked again until one
   * does, while the consumer reads no connection event (dtestx -u waits
   * for the peer's request first). */
  assert_dat(dat_psp_free(p.psp), DAT_SUCCESS);
  assert_dat(dat_ep_connect(p.c_ep, ia_attr.ia_address_ptr, qual, 10 * 1000 * 1000, sizeof(req),
                            (DAT_PVOID) req, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
             DAT_SUCCESS);
  g_usleep(100 * 1000);
  assert_dat(dat_psp_create(f->ia, qual, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &p.psp), DAT_SUCCESS);
  wait_event_of(p.cr_evd, (DAT_EVENT_NUMBER) DAT_IB_UD_CONNECTION_REQUEST_EVENT, &ev);
  assert_dat(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, p.s_ep, 0, NULL), DAT_SUCCESS);
  wait_ud_conn(p.s_conn, DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED, DAT_IB_UD_PASSIVE_REMOTE_AH, p.s_ep, &ev);
  wait_ud_conn(p.c_conn, DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED, DAT_IB_UD_REMOTE_AH, p.c_ep, &ev);

  /* The client's AH goes with its EP, as DAPL's (dtestcm -u frees none):
   * then the zone is free. */
  assert_dat(dat_psp_free(p.psp), DAT_SUCCESS);
  assert_dat(dat_ep_free(p.s_ep), DAT_SUCCESS);
  assert_dat(dat_ep_free(p.c_ep), DAT_SUCCESS);
  assert_dat(dat_ib_ud_ah_free(p.c_ep, &cx.remote_ah), DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP));
  assert_dat(dat_lmr_free(src.lmr), DAT_SUCCESS);
  assert_dat(dat_lmr_free(rcv.lmr), DAT_SUCCESS);
  assert_dat(dat_pz_free(f->pz), DAT_SUCCESS);
  assert_dat(dat_pz_create(f->ia, &f->pz), DAT_SUCCESS);
out_evds:
  assert_dat(dat_evd_free(p.cr_evd), DAT_SUCCESS);
  assert_dat(dat_evd_free(p.s_dto), DAT_SUCCESS);
  assert_dat(dat_evd_free(p.s_conn), DAT_SUCCESS);
  assert_dat(dat_evd_free(p.c_dto), DAT_SUCCESS);
  assert_dat(dat_evd_free(p.c_conn), DAT_SUCCESS);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  if (argc > 1)
    g_strlcpy(provider, argv[1], sizeof(provider));
  if (g_getenv("DAT_OVERRIDE") == NULL) {
    g_printerr("DAT_OVERRIDE must name the build tree's dat.conf\n");
    return 77;
  }
#define ADD(path, fn) g_test_add(path, fixture_t, NULL, open_ia, fn, close_ia)
  ADD("/dat/ia/query", test_ia_query);
  ADD("/dat/ia/device-limits", test_ia_device_limits);
  ADD("/dat/ia/ha-related", test_ia_ha_related);
  ADD("/dat/handle/stale", test_stale_handle);
  ADD("/dat/handle/forged", test_forged_handle);
  ADD("/dat/handle/free-race", test_free_race);
  ADD("/dat/lmr/stale-context", test_stale_lmr_context);
  ADD("/dat/dto/post-free-race", test_post_free_race);
  ADD("/dat/evd/software", test_software_events);
  ADD("/dat/cno/wait", test_cno);
  ADD("/dat/cno/fd", test_cno_fd);
  ADD("/dat/evd/free-waited", test_evd_free_waited);
  ADD("/dat/evd/dequeue-free-race", test_evd_dequeue_free_race);
  ADD("/dat/evd/unwaitable", test_evd_unwaitable);
  ADD("/dat/evd/resize", test_evd_resize);
  ADD("/dat/cno/free-waited", test_cno_free_waited);
  ADD("/dat/cno/last-evd-freed", test_cno_last_evd_freed);
  ADD("/dat/ia/close-waited", test_ia_close_waited);
  ADD("/dat/cm/service-points", test_service_points);
  ADD("/dat/cm/psp-provider-flag", test_psp_provider_flag);
  ADD("/dat/cm/rsp-request", test_rsp_request);
  ADD("/dat/cm/cr-handoff", test_cr_handoff);
  ADD("/dat/cno/modify-late", test_cno_modify_late);
  ADD("/dat/cno/modify-race", test_cno_modify_race);
  ADD("/dat/srq/stale-handle", test_srq_stale);
  ADD("/dat/srq/free-in-use", test_srq_in_use);
  ADD("/dat/srq/recv", test_srq_recv);
  ADD("/dat/cm/dup-connect", test_dup_connect);
  ADD("/dat/cm/csp", test_csp);
  ADD("/dat/ep/modify", test_ep_modify);
  ADD("/dat/ep/recv-query", test_ep_recv_query);
  ADD("/dat/ep/set-watermark", test_ep_set_watermark);
  ADD("/dat/rmr/bind-write-read", test_rmr_bind);
  ADD("/dat/rmr/send-with-invalidate", test_rmr_send_invalidate);
  ADD("/dat/rmr/read-to-rmr", test_rmr_read_to_rmr);
  ADD("/dat/rmr/stale-handle", test_rmr_stale);
  ADD("/dat/lmr/sync", test_lmr_sync);
  ADD("/dat/lmr/shared", test_lmr_shared);
  ADD("/dat/lmr/of-lmr", test_lmr_of_lmr);
  ADD("/dat/ib-extensions", test_ib_extensions);
  ADD("/dat/ib-extensions/ud", test_ud);
  ADD("/dat/cm/connect-before-listen", test_connect_before_listen);
  ADD("/dat/cm/disconnect-states", test_disconnect_states);
  return g_test_run();
}
