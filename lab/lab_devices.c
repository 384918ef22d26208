/*
 * lab-devices: the verbs devices a program built on the host sees when it
 * runs in the lab VM (lab/run.sh), one line each:
 *
 *   rxe0 transport=IB link=Ethernet port1=active
 *   siw0 transport=iWARP link=Ethernet port1=active
 *
 * It links GLib and libibverbs as the project's providers do, so that
 * lab/lab-smoke.sh proves both resolve in the VM.  Exits 1 when there is
 * no device or one cannot be opened.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <glib.h>
#include <infiniband/verbs.h>

static const char *
transport_name(enum ibv_transport_type t)
{
  switch (t) {
  case IBV_TRANSPORT_IB: return "IB";
  case IBV_TRANSPORT_IWARP: return "iWARP";
  case IBV_TRANSPORT_USNIC: return "usNIC";
  case IBV_TRANSPORT_USNIC_UDP: return "usNIC-UDP";
  default: return "unknown";
  }
}

static const char *
link_name(uint8_t link_layer)
{
  switch (link_layer) {
  case IBV_LINK_LAYER_INFINIBAND: return "InfiniBand";
  case IBV_LINK_LAYER_ETHERNET: return "Ethernet";
  default: return "unspecified";
  }
}

int
main(void)
{
  int n = 0, bad = 0;
  struct ibv_device **list = ibv_get_device_list(&n);

  if (list == NULL) {
    g_printerr("lab-devices: ibv_get_device_list: %s\n", g_strerror(errno));
    return 1;
  }
  if (n == 0) {
    g_printerr("lab-devices: no verbs device (is ib_uverbs loaded, a link added?)\n");
    bad = 1;
  }
  for (int i = 0; i < n; i++) {
    const char *name = ibv_get_device_name(list[i]);
    struct ibv_context *ctx = ibv_open_device(list[i]);
    struct ibv_port_attr port;
    int err;

    if (ctx == NULL) {
      g_printerr("lab-devices: opening %s: %s\n", name, g_strerror(errno));
      bad = 1;
      continue;
    }
    err = ibv_query_port(ctx, 1, &port);
    if (err != 0) {
      g_printerr("lab-devices: querying port 1 of %s: %s\n", name, g_strerror(err));
      bad = 1;
    } else {
      g_print("%s transport=%s link=%s port1=%s\n", name,
              transport_name(list[i]->transport_type), link_name(port.link_layer),
              ibv_port_state_str(port.state));
    }
    ibv_close_device(ctx);
  }
  ibv_free_device_list(list);
  return bad;
}
