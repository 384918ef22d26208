/*
 * itapi-info: what this host's IT-API stack offers.
 *
 *   itapi-info [-v] [--json]
 *
 * Lists the RNIC-PI providers (usable, or refused with the reason), the
 * interfaces with their capability record as it_ia_info_t reports it, and
 * which IT-API calls this build implements (the others return
 * IT_ERR_OP_NOT_SUPPORTED).
 *
 * SPDX-License-Identifier: MIT
 */
#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>
#include <itx.h>

#include <arpa/inet.h>
#include <glib.h>
#include <stdio.h>
#include <string.h>


static gboolean opt_json, opt_verbose, opt_dat_conf;
static char *opt_dat_lib;

/* --dat-conf: one dat.conf line per interface, in DAPL's format, for the
 * DAT provider libdaplitapi (doc/dat.md): the IA name itapi-<interface>,
 * the library, and the interface as the first word of ia_params. */
static void
print_dat_conf(void)
{
  it_interface_t ifs[64];
  size_t n = G_N_ELEMENTS(ifs), total = 0;
  it_interface_list(ifs, &n, &total);
  const char *lib = opt_dat_lib != NULL ? opt_dat_lib : ITAPI_DAT_MODULE;
  for (size_t i = 0; i < n; i++)
    printf("itapi-%s u2.0 nonthreadsafe default %s dapl.2.0 \"%s 0\" \"\"\n", ifs[i].name, lib,
           ifs[i].name);
}

static void
json_str(GString *o, const char *s)
{
  g_string_append_c(o, '"');
  for (; *s; s++) {
    unsigned char c = (unsigned char) *s;
    if (c == '"' || c == '\\')
      g_string_append_printf(o, "\\%c", c);
    else if (c < 0x20)
      g_string_append_printf(o, "\\u%04x", c);
    else
      g_string_append_c(o, (char) c);
  }
  g_string_append_c(o, '"');
}

static const char *
transport_name(it_transport_type_t t)
{
  switch (t) {
  case IT_IB_TRANSPORT: return "InfiniBand";
  case IT_VIA_IP_TRANSPORT: return "VIA/IP";
  case IT_VIA_FC_TRANSPORT: return "VIA/FC";
  case IT_IWARP_TCP_TRANSPORT: return "iWARP";
  default: return "vendor";
  }
}

/* The it_ia_info_t fields worth printing, as name/value pairs. */
typedef struct { const char *name; unsigned long long value; gboolean boolean; } field_t;

static GArray *
info_fields(const it_ia_info_t *i)
{
  GArray *a = g_array_new(FALSE, FALSE, sizeof(field_t));
#define B(f) do { field_t x = { #f, (unsigned long long) i->f, TRUE }; g_array_append_val(a, x); } while (0)
#define N(f) do { field_t x = { #f, (unsigned long long) i->f, FALSE }; g_array_append_val(a, x); } while (0)
  N(api_major_version); N(api_minor_version); N(sw_major_version); N(sw_minor_version);
  N(transport_type); N(supported_service_types); N(dto_alignment_hint);
  N(connect_private_data_len); N(accept_private_data_len); N(reject_private_data_len);
  N(disconnect_private_data_len); N(ud_req_private_data_len); N(ud_rep_private_data_len);
  N(num_spigots);
  B(ep_work_queues_resizable); B(three_way_handshake_support); B(private_data_support);
  B(max_message_size_support); B(ird_ord_ia_support); B(ird_ord_suppressible);
  B(spigot_online_support); B(spigot_offline_support); B(srq_support);
  B(hard_hi_watermark_support); B(soft_hi_watermark_support); B(srq_resizable);
  B(extended_iwarp_qp_states); B(socket_conversion_support); B(rdma_read_ord_increasable);
  B(rdma_read_ird_modifiable); N(rmr_types_supported); B(addr_mode_relative_support);
  B(rdma_read_requires_remote_write); B(ep_rdma_enables_modifiable);
  B(rdma_read_local_extensions); B(dto_evd_overflow_detection); B(atomic_support);
  B(lmr_link_support); B(direct_lmr_handle_support); B(post_send_unlink_remote_support);
  B(narrow_rmr_unlink_support); B(wide_rmr_unlink_support); B(unlink_fence_support);
  N(iobl_types_supported);
#undef B
#undef N
  return a;
}

/* The devices a provider found and does not offer (RNIC-PI 1.9), each
 * with its reason: a line each, or a JSON member "refused_devices". */
static void
refused_devices(GString *o, size_t prov)
{
  itx_refused_device_t devs[16];
  size_t n = G_N_ELEMENTS(devs);
  if (itx_provider_refused_devices(prov, devs, &n) != IT_SUCCESS)
    return;
  n = MIN(n, G_N_ELEMENTS(devs));
  if (opt_json)
    g_string_append(o, ", \"refused_devices\": [");
  for (size_t i = 0; i < n; i++) {
    if (opt_json) {
      g_string_append(o, i ? ", {\"name\": " : "{\"name\": ");
      json_str(o, devs[i].name);
      g_string_append(o, ", \"reason\": ");
      json_str(o, devs[i].reason);
      g_string_append(o, "}");
    } else {
      if (strcmp(devs[i].name, "(none)") == 0)
        g_string_append_printf(o, "  %-10s   no interface: %s\n", "", devs[i].reason);
      else
        g_string_append_printf(o, "  %-10s   device %s is not an interface: %s\n", "", devs[i].name,
                               devs[i].reason);
    }
  }
  if (opt_json)
    g_string_append(o, "]");
}

typedef struct { const char *name; unsigned long long value; } limit_t;

static GArray *
caps_limits(const itx_caps_t *c)
{
  GArray *a = g_array_new(FALSE, FALSE, sizeof(limit_t));
#define L(f) do { limit_t x = { #f, (unsigned long long) c->f }; g_array_append_val(a, x); } while (0)
  L(max_qp); L(max_qp_wr); L(max_cq); L(max_cqe); L(max_mr); L(max_pd); L(max_srq);
  L(max_send_sge); L(max_recv_sge); L(max_rdma_write_sge); L(max_rdma_read_sge); L(max_inline);
  L(max_ird); L(max_ord); L(max_msg_size); L(max_mr_size); L(num_ports);
#undef L
  return a;
}

/* A call this build implements may still need a feature of the interface. */
static gboolean
usable_on(const itx_call_info_t *c, const it_ia_info_t *info)
{
  if (!c->supported)
    return FALSE;
  if (strcmp(c->name, "it_post_atomic") == 0)
    return info->atomic_support;
  /* Unlinked LMRs, I/O address mapping, reads into RMRs (IT-API 2.1). */
  if (strcmp(c->name, "it_lmr_create_unlinked") == 0 || strcmp(c->name, "it_lmr_link") == 0 ||
      strcmp(c->name, "it_lmr_unlink") == 0)
    return info->lmr_link_support;
  if (strcmp(c->name, "it_mem_map") == 0 || strcmp(c->name, "it_mem_unmap") == 0)
    return info->iobl_types_supported != 0;
  if (strcmp(c->name, "it_post_rdma_read_to_rmr") == 0)
    return info->rdma_read_local_extensions;
  if (g_str_has_prefix(c->name, "it_srq_"))
    return info->srq_support;
  if (g_str_has_prefix(c->name, "it_rmr_"))
    return info->rmr_types_supported != IT_RMR_TYPE_DEFAULT;
  if (strcmp(c->name, "it_post_send_and_unlink") == 0)
    return info->post_send_unlink_remote_support;
  if (strcmp(c->name, "it_socket_convert") == 0)
    return info->socket_conversion_support;
  /* Datagram calls: only where the IA offers the UD service. */
  static const char *const ud_calls[] = {
    "it_ep_ud_create", "it_post_sendto", "it_post_recvfrom", "it_address_handle_",
    "it_ud_service_",
  };
  for (size_t i = 0; i < G_N_ELEMENTS(ud_calls); i++)
    if (g_str_has_prefix(c->name, ud_calls[i]))
      return (info->supported_service_types & IT_UD_SERVICE) != 0;
  return TRUE;
}

/* The device an alias of the configuration file names, or NULL when
 * @name is a device's own interface. */
static const char *
alias_of(const char *name)
{
  g_autofree char *scope = g_strdup_printf("interface %s", name);
  for (size_t i = 0; i < itx_setting_count(); i++) {
    itx_setting_t st;
    if (itx_setting_get(i, &st) == IT_SUCCESS && strcmp(st.scope, scope) == 0 &&
        strcmp(st.key, "device") == 0 && strcmp(st.value, name) != 0)
      return st.value;
  }
  return NULL;
}

/* Each setting in force and where it came from (itapi.conf(5)). */
static void
settings(GString *o)
{
  const char *err = itx_conf_error();
  if (opt_json) {
    g_string_append(o, "{\n  \"conf_error\": ");
    if (err != NULL)
      json_str(o, err);
    else
      g_string_append(o, "null");
    g_string_append(o, ",\n  \"settings\": [");
  } else {
    g_string_append(o, "Settings:\n");
    if (err != NULL)
      g_string_append_printf(o, "  configuration file refused: %s\n", err);
  }
  for (size_t i = 0; i < itx_setting_count(); i++) {
    itx_setting_t st;
    itx_setting_get(i, &st);
    if (opt_json) {
      g_string_append_printf(o, "%s\n    {\"scope\": ", i ? "," : "");
      json_str(o, st.scope);
      g_string_append(o, ", \"key\": ");
      json_str(o, st.key);
      g_string_append(o, ", \"value\": ");
      json_str(o, st.value);
      g_string_append(o, ", \"origin\": ");
      json_str(o, st.origin);
      g_string_append(o, "}");
    } else {
      g_autofree char *name = strcmp(st.scope, "itapi") == 0 ? g_strdup(st.key)
                              : g_strdup_printf("%s %s", st.scope, st.key);
      g_string_append_printf(o, "  %-34s %s (%s)\n", name, st.value, st.origin);
    }
  }
  g_string_append(o, opt_json ? "\n  ],\n" : "");
}

static void
addr_str(const it_net_addr_t *a, char *buf, size_t len)
{
  if (a->addr_type == IT_IPV4)
    inet_ntop(AF_INET, &a->addr.ipv4, buf, (socklen_t) len);
  else
    inet_ntop(AF_INET6, &a->addr.ipv6, buf, (socklen_t) len);
}

int
main(int argc, char **argv)
{
  GOptionEntry entries[] = {
    { "json", 0, 0, G_OPTION_ARG_NONE, &opt_json, "print JSON for scripts", NULL },
    { "verbose", 'v', 0, G_OPTION_ARG_NONE, &opt_verbose, "print every capability and call", NULL },
    { "dat-conf", 0, 0, G_OPTION_ARG_NONE, &opt_dat_conf,
      "print a dat.conf line per interface for the DAT provider", NULL },
    { "dat-lib", 0, 0, G_OPTION_ARG_FILENAME, &opt_dat_lib,
      "the DAT provider library the lines name", "PATH" },
    { NULL, 0, 0, 0, NULL, NULL, NULL },
  };
  GError *err = NULL;
  GOptionContext *ctx = g_option_context_new("- list IT-API providers, interfaces and calls");
  g_option_context_add_main_entries(ctx, entries, NULL);
  if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
    fprintf(stderr, "itapi-info: %s\n", err->message);
    return 2;
  }
  g_option_context_free(ctx);
  if (opt_dat_conf) {
    print_dat_conf();
    return 0;
  }

  GString *o = g_string_new(NULL);
  settings(o);
  if (opt_json)
    g_string_append(o, "  \"providers\": [");
  else
    g_string_append(o, "Providers:\n");
  for (size_t i = 0; i < itx_provider_count(); i++) {
    itx_provider_info_t p;
    itx_provider_get(i, &p);
    if (opt_json) {
      g_string_append_printf(o, "%s\n    {\"name\": ", i ? "," : "");
      json_str(o, p.name);
      g_string_append(o, ", \"origin\": ");
      json_str(o, p.origin);
      g_string_append_printf(o, ", \"usable\": %s", p.usable ? "true" : "false");
      if (p.usable) {
        g_string_append(o, ", \"version\": ");
        json_str(o, p.version);
        g_string_append(o, ", \"description\": ");
        json_str(o, p.description);
        refused_devices(o, i);
      } else {
        g_string_append(o, ", \"reason\": ");
        json_str(o, p.reason);
      }
      g_string_append(o, "}");
    } else if (!p.usable) {
      g_string_append_printf(o, "  %-10s refused: %s (%s)\n", p.name, p.reason, p.origin);
    } else {
      g_string_append_printf(o, "  %-10s %s, version %s (%s)\n", p.name, p.description,
                             p.version, p.origin);
      refused_devices(o, i);
    }
  }

  it_interface_t ifs[32];
  size_t n = G_N_ELEMENTS(ifs), total = 0;
  it_interface_list(ifs, &n, &total);
  g_string_append(o, opt_json ? "\n  ],\n  \"interfaces\": [" : "Interfaces:\n");
  for (size_t i = 0; i < n; i++) {
    const char *alias = alias_of(ifs[i].name);
    if (alias != NULL && !opt_json) {
      /* Its device's record is shown under the device's own name. */
      g_string_append_printf(o, "  %s: alias of %s, %s, IT-API %u.%u\n", ifs[i].name, alias,
                             transport_name(ifs[i].transport_type), ifs[i].major_version,
                             ifs[i].minor_version);
      continue;
    }
    it_ia_handle_t ia;
    it_ia_info_t *info = NULL;
    it_status_t st = it_ia_create(ifs[i].name, 2, 1, &ia);
    if (st == IT_SUCCESS)
      st = it_ia_query(ia, &info);
    if (opt_json) {
      g_string_append_printf(o, "%s\n    {\"name\": ", i ? "," : "");
      json_str(o, ifs[i].name);
      if (alias != NULL) {
        g_string_append(o, ", \"alias_of\": ");
        json_str(o, alias);
      }
      g_string_append_printf(o, ", \"transport\": ");
      json_str(o, transport_name(ifs[i].transport_type));
      g_string_append_printf(o, ", \"it_api_version\": \"%u.%u\"", ifs[i].major_version, ifs[i].minor_version);
    } else {
      g_string_append_printf(o, "  %s: %s, IT-API %u.%u\n", ifs[i].name,
                             transport_name(ifs[i].transport_type), ifs[i].major_version,
                             ifs[i].minor_version);
    }
    if (st != IT_SUCCESS) {
      if (opt_json) {
        g_string_append(o, ", \"error\": ");
        json_str(o, itx_error_detail());
        g_string_append(o, "}");
      } else {
        g_string_append_printf(o, "    cannot open: %s (%s)\n", itx_status_name(st), itx_error_detail());
      }
      continue;
    }
    GArray *f = info_fields(info);
    itx_caps_t rc;
    gboolean have_rc = itx_interface_caps(ifs[i].name, &rc) == IT_SUCCESS;
    GArray *lim = have_rc ? caps_limits(&rc) : g_array_new(FALSE, FALSE, sizeof(limit_t));
    GString *feat = g_string_new(NULL);
    for (int b = 0; have_rc && b < 64; b++)
      if (rc.features & (1ull << b))
        g_string_append_printf(feat, "%s%s", feat->len ? " " : "", itx_feature_name(1ull << b));
    size_t usable = 0;
    for (size_t k = 0; k < itx_call_count(); k++)
      usable += usable_on(itx_call_get(k), info) ? 1 : 0;
    if (opt_json) {
      g_string_append(o, ", \"addresses\": [");
      for (size_t a = 0; a < info->spigot_info[0].num_net_addr; a++) {
        char buf[64];
        addr_str(&info->spigot_info[0].net_addr[a], buf, sizeof(buf));
        g_string_append(o, a ? ", " : "");
        json_str(o, buf);
      }
      g_string_append(o, "], \"ia_info\": {");
      for (guint k = 0; k < f->len; k++) {
        field_t *x = &g_array_index(f, field_t, k);
        g_string_append_printf(o, "%s\"%s\": ", k ? ", " : "", x->name);
        if (x->boolean)
          g_string_append(o, x->value ? "true" : "false");
        else
          g_string_append_printf(o, "%llu", x->value);
      }
      g_string_append_printf(o, "}, \"send_completion\": \"%s\", \"rnicpi_features\": [",
                             itx_ia_completion(ia) == ITX_COMPLETION_PLACED ? "placed" : "sent");
      g_auto(GStrv) fs = g_strsplit(feat->str, " ", -1);
      for (char **x = fs; *x && **x; x++) {
        g_string_append(o, x == fs ? "" : ", ");
        json_str(o, *x);
      }
      g_string_append(o, "], \"rnicpi_limits\": {");
      for (guint k = 0; k < lim->len; k++) {
        limit_t *x = &g_array_index(lim, limit_t, k);
        g_string_append_printf(o, "%s\"%s\": %llu", k ? ", " : "", x->name, x->value);
      }
      g_string_append_printf(o, "}, \"calls_usable\": %zu, \"calls_not_usable\": [", usable);
      gboolean first = TRUE;
      for (size_t k = 0; k < itx_call_count(); k++)
        if (!usable_on(itx_call_get(k), info)) {
          g_string_append_printf(o, "%s\"%s\"", first ? "" : ", ", itx_call_get(k)->name);
          first = FALSE;
        }
      g_string_append(o, "]}");
    } else {
      for (size_t a = 0; a < info->spigot_info[0].num_net_addr; a++) {
        char buf[64];
        addr_str(&info->spigot_info[0].net_addr[a], buf, sizeof(buf));
        g_string_append_printf(o, "    address %s\n", buf);
      }
      g_string_append_printf(o, "    private data: connect %zu, accept %zu, reject %zu, disconnect %zu bytes\n",
                             info->connect_private_data_len, info->accept_private_data_len,
                             info->reject_private_data_len, info->disconnect_private_data_len);
      g_string_append_printf(o, "    send completion: %s\n",
                             itx_ia_completion(ia) == ITX_COMPLETION_PLACED
                               ? "the peer placed the data (a refusal completes it in error)"
                               : "the transport took the message (iWARP; a refusal breaks "
                                 "the connection)");
      for (guint k = 0; k < f->len; k++) {
        field_t *x = &g_array_index(f, field_t, k);
        if (x->boolean && (opt_verbose || x->value))
          g_string_append_printf(o, "    %-34s %s\n", x->name, x->value ? "yes" : "no");
        else if (!x->boolean && opt_verbose)
          g_string_append_printf(o, "    %-34s %llu\n", x->name, x->value);
      }
      if (have_rc) {
        g_string_append_printf(o, "    RNIC-PI features: %s\n", feat->str);
        g_string_append(o, "    limits:");
        for (guint k = 0; k < lim->len; k++) {
          limit_t *x = &g_array_index(lim, limit_t, k);
          if (opt_verbose || k < 6 || strcmp(x->name, "max_msg_size") == 0)
            g_string_append_printf(o, "%s %s %llu", k ? "," : "", x->name, x->value);
        }
        g_string_append_c(o, '\n');
        /* What an application sizes its endpoints by: the numbers an
         * application written for a big InfiniBand HCA asks for. */
        const itx_caps_t *c = &rc;
        g_string_append_printf(o, "    per endpoint: IRD %u, ORD %u, RDMA Read segments %u, "
                               "RDMA Write segments %u, Send segments %u, receive segments %u, "
                               "inline %u bytes\n", c->max_ird, c->max_ord,
                               c->max_rdma_read_sge, c->max_rdma_write_sge, c->max_send_sge,
                               c->max_recv_sge, c->max_inline);
      }
      g_string_append_printf(o, "    IT-API calls usable on this interface: %zu of %zu\n", usable,
                             itx_call_count());
    }
    g_array_unref(f);
    g_array_unref(lim);
    g_string_free(feat, TRUE);
    it_ia_info_free(info);
    it_ia_free(ia);
  }

  size_t ncalls = itx_call_count(), nsup = 0;
  for (size_t i = 0; i < ncalls; i++)
    nsup += itx_call_get(i)->supported ? 1 : 0;
  if (opt_json) {
    g_string_append(o, "\n  ],\n  \"calls\": [");
    for (size_t i = 0; i < ncalls; i++) {
      const itx_call_info_t *c = itx_call_get(i);
      g_string_append_printf(o, "%s\n    {\"name\": \"%s\", \"area\": \"%s\", \"supported\": %s}",
                             i ? "," : "", c->name, c->area, c->supported ? "true" : "false");
    }
    g_string_append(o, "\n  ]\n}\n");
  } else {
    if (nsup == ncalls)
      g_string_append_printf(o, "IT-API calls: all %zu implemented (what an interface lacks, its "
                             "capability record says; see 'usable' above)\n", ncalls);
    else
      g_string_append_printf(o, "IT-API calls: %zu of %zu implemented; not supported "
                             "(return IT_ERR_OP_NOT_SUPPORTED):\n", nsup, ncalls);
    for (size_t i = 0; i < ncalls; i++) {
      const itx_call_info_t *c = itx_call_get(i);
      if (!c->supported)
        g_string_append_printf(o, "  %-40s %s\n", c->name, c->area);
      else if (opt_verbose)
        g_string_append_printf(o, "  %-40s %s (implemented)\n", c->name, c->area);
    }
  }
  fputs(o->str, stdout);
  g_string_free(o, TRUE);
  return 0;
}
