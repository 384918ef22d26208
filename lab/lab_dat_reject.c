/*
 * lab-dat-reject: a connection refused with private data through any DAT
 * provider libdat2 knows, so that the plugfest (lab/ib-guest.sh) checks
 * what each provider makes of the other's refusal.  The server takes one
 * request on PORT and rejects it with the bytes "lab-dat-reject: refused";
 * the client connects with "lab-dat-reject: hello" and must get
 * DAT_CONNECTION_EVENT_PEER_REJECTED carrying the server's bytes at the
 * start of its private data.  Each prints what it got and exits 0 when it
 * is what the other sent.
 *
 *   lab-dat-reject -s IA PORT          # the server
 *   lab-dat-reject -c IA ADDRESS PORT  # the client
 *
 * SPDX-License-Identifier: MIT
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dat2/udat.h>

static const char hello[] = "lab-dat-reject: hello";
static const char refused[] = "lab-dat-reject: refused";

static int
failed(const char *what, DAT_RETURN ret)
{
  const char *major = "?", *minor = "?";
  dat_strerror(ret, &major, &minor);
  fprintf(stderr, "lab-dat-reject: %s failed: %s %s (0x%x)\n", what, major, minor, (unsigned) ret);
  return 1;
}

/* The first bytes of @p pdata as text, for the log. */
static void
show(const char *who, const void *pdata, DAT_COUNT size)
{
  const unsigned char *p = pdata;
  printf("lab-dat-reject: %s: %d bytes of private data:", who, (int) size);
  for (DAT_COUNT i = 0; p != NULL && i < size && i < 32; i++)
    printf(" %02x", p[i]);
  printf("\n");
}

static int
server(DAT_IA_HANDLE ia, DAT_CONN_QUAL port)
{
  DAT_EVD_HANDLE cr_evd;
  DAT_PSP_HANDLE psp;
  DAT_RETURN ret = dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd);
  if (ret != DAT_SUCCESS)
    return failed("dat_evd_create (CR)", ret);
  ret = dat_psp_create(ia, port, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp);
  if (ret != DAT_SUCCESS)
    return failed("dat_psp_create", ret);
  printf("lab-dat-reject: listening on %llu\n", (unsigned long long) port);
  fflush(stdout);
  DAT_EVENT ev;
  DAT_COUNT n;
  ret = dat_evd_wait(cr_evd, 60 * 1000000, 1, &ev, &n);
  if (ret != DAT_SUCCESS)
    return failed("dat_evd_wait (CR)", ret);
  if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT) {
    fprintf(stderr, "lab-dat-reject: event 0x%x on the CR EVD, not a connection request\n",
            (unsigned) ev.event_number);
    return 1;
  }
  DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
  DAT_CR_PARAM param;
  ret = dat_cr_query(cr, DAT_CR_FIELD_ALL, &param);
  if (ret != DAT_SUCCESS)
    return failed("dat_cr_query", ret);
  show("the request's", param.private_data, param.private_data_size);
  int ok = param.private_data_size >= (DAT_COUNT) sizeof(hello) &&
           memcmp(param.private_data, hello, sizeof(hello)) == 0;
  ret = dat_cr_reject(cr, sizeof(refused), (DAT_PVOID) refused);
  if (ret != DAT_SUCCESS)
    return failed("dat_cr_reject", ret);
  if (!ok) {
    fprintf(stderr, "lab-dat-reject: the request's private data does not start with \"%s\"\n", hello);
    return 1;
  }
  printf("lab-dat-reject: server: the request carried \"%s\"; refused\n", hello);
  dat_psp_free(psp);
  dat_evd_free(cr_evd);
  return 0;
}

static int
client(DAT_IA_HANDLE ia, const char *addr, DAT_CONN_QUAL port)
{
  struct sockaddr_in sin = { .sin_family = AF_INET };
  if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
    fprintf(stderr, "lab-dat-reject: %s is not an IPv4 address\n", addr);
    return 2;
  }
  DAT_PZ_HANDLE pz;
  DAT_EVD_HANDLE dto_evd, conn_evd;
  DAT_EP_HANDLE ep;
  DAT_RETURN ret = dat_pz_create(ia, &pz);
  if (ret != DAT_SUCCESS)
    return failed("dat_pz_create", ret);
  ret = dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto_evd);
  if (ret != DAT_SUCCESS)
    return failed("dat_evd_create (DTO)", ret);
  ret = dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_evd);
  if (ret != DAT_SUCCESS)
    return failed("dat_evd_create (connection)", ret);
  ret = dat_ep_create(ia, pz, dto_evd, dto_evd, conn_evd, NULL, &ep);
  if (ret != DAT_SUCCESS)
    return failed("dat_ep_create", ret);
  ret = dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR) &sin, port, 30 * 1000000, sizeof(hello),
                       (DAT_PVOID) hello, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
  if (ret != DAT_SUCCESS)
    return failed("dat_ep_connect", ret);
  DAT_EVENT ev;
  DAT_COUNT n;
  ret = dat_evd_wait(conn_evd, 60 * 1000000, 1, &ev, &n);
  if (ret != DAT_SUCCESS)
    return failed("dat_evd_wait (connection)", ret);
  const DAT_CONNECTION_EVENT_DATA *d = &ev.event_data.connect_event_data;
  if (ev.event_number != DAT_CONNECTION_EVENT_PEER_REJECTED) {
    fprintf(stderr, "lab-dat-reject: connection event 0x%x, not DAT_CONNECTION_EVENT_PEER_REJECTED (0x%x)\n",
            (unsigned) ev.event_number, (unsigned) DAT_CONNECTION_EVENT_PEER_REJECTED);
    return 1;
  }
  show("the refusal's", d->private_data, d->private_data_size);
  if (d->private_data_size < (DAT_COUNT) sizeof(refused) ||
      memcmp(d->private_data, refused, sizeof(refused)) != 0) {
    fprintf(stderr, "lab-dat-reject: the refusal's private data does not start with \"%s\"\n", refused);
    return 1;
  }
  printf("lab-dat-reject: client: refused by the peer with \"%s\"\n", refused);
  dat_ep_free(ep);
  dat_evd_free(conn_evd);
  dat_evd_free(dto_evd);
  dat_pz_free(pz);
  return 0;
}

int
main(int argc, char **argv)
{
  int srv = argc == 4 && strcmp(argv[1], "-s") == 0;
  int cli = argc == 5 && strcmp(argv[1], "-c") == 0;
  if (!srv && !cli) {
    fprintf(stderr, "usage: lab-dat-reject -s IA PORT | -c IA ADDRESS PORT\n");
    return 2;
  }
  DAT_IA_HANDLE ia;
  DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
  DAT_RETURN ret = dat_ia_open(argv[2], 8, &async_evd, &ia);
  if (ret != DAT_SUCCESS)
    return failed("dat_ia_open", ret);
  DAT_CONN_QUAL port = strtoull(argv[srv ? 3 : 4], NULL, 10);
  int rc = srv ? server(ia, port) : client(ia, argv[3], port);
  dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
  return rc;
}
