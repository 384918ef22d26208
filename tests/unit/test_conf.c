/*
 * The configuration file, itapi.conf(5): the parser (a good file, every
 * kind of error with its line), the file rule (another user's file is
 * refused), aliases as interfaces, the environment over the file, and an
 * IT-API program that moves data over emul0 through an alias.
 *
 * Each case that reads a file runs in a subprocess: the library reads the
 * file once, when it starts.
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "conf.h"
#include "kal.h"

static void
test_parse_good(void)
{
  g_test_summary("itapi.conf: a file with every key parses; each value keeps its line");
  const char *text =
    "# the lab's settings\n"
    "[itapi]\n"
    "provider = emul , iwarp\n"
    "cm=auto\n"
    "\n"
    "  [interface vp_softrdma]  \n"
    "device = emul0\n"
    "provider = emul\n"
    "cm = host\n"
    "[interface iwarp0]\n"
    "cm = provider\n";
  kal_conf_t *c = NULL;
  g_autofree char *why = NULL;
  g_assert_cmpint(kal_conf_parse(text, "t.conf", &c, &why), ==, RNICPI_OK);
  g_assert_null(why);
  g_assert_cmpstr(c->provider.text, ==, "emul , iwarp");
  g_assert_cmpuint(c->provider.line, ==, 3);
  g_assert_cmpstr(c->cm.text, ==, "auto");
  g_assert_cmpuint(c->cm.line, ==, 4);
  g_assert_cmpuint(c->n_ifaces, ==, 2);
  const kal_conf_iface_t *a = kal_conf_iface(c, "vp_softrdma");
  g_assert_nonnull(a);
  g_assert_cmpuint(a->line, ==, 6);
  g_assert_cmpstr(a->device.text, ==, "emul0");
  g_assert_cmpuint(a->device.line, ==, 7);
  g_assert_cmpstr(a->provider.text, ==, "emul");
  g_assert_cmpstr(a->cm.text, ==, "host");
  const kal_conf_iface_t *d = kal_conf_iface(c, "iwarp0");
  g_assert_nonnull(d);
  g_assert_null(d->device.text);
  g_assert_cmpuint(d->device.line, ==, 0);
  g_assert_cmpstr(d->cm.text, ==, "provider");
  g_assert_null(kal_conf_iface(c, "emul0"));
  kal_conf_free(c);

  g_assert_cmpint(kal_conf_parse("", "empty.conf", &c, NULL), ==, RNICPI_OK);
  g_assert_cmpuint(c->n_ifaces, ==, 0);
  g_assert_null(c->provider.text);
  kal_conf_free(c);
}

static void
test_parse_errors(void)
{
  g_test_summary("itapi.conf: each kind of wrong line is refused with the file, its line number "
                 "and what is wrong");
  static const struct {
    const char *text;
    const char *says;
  } bad[] = {
    { "provider = emul\n", "t.conf, line 1: 'provider' comes before any section" },
    { "# c\n[itapi\n", "line 2: '[itapi' opens a section without closing it" },
    { "[stack]\n", "line 1: [stack] is neither [itapi] nor [interface NAME]" },
    { "[interface]\n", "line 1: [interface] is neither [itapi] nor [interface NAME]" },
    { "[interface a b]\n", "line 1: [interface a b] has more than two words" },
    { "[interface vp/soft]\n", "line 1: 'vp/soft' holds '/'" },
    { "[itapi]\n[itapi]\n", "line 2: [itapi] appears a second time" },
    { "[interface x]\ndevice = emul0\n\n[interface x]\n", "line 4: interface 'x' is already defined on line 1" },
    { "[itapi]\nprovder = emul\n", "line 2: 'provder' is not a key of [itapi] (its keys: provider, cm)" },
    { "[interface x]\nrole = active\n", "line 2: 'role' is not a key of [interface x] (its keys: device, provider, cm)" },
    { "[interface x]\ndevice = emul0\ndevice = emul1\n", "line 3: 'device' is already set on line 2" },
    { "[itapi]\ncm =\n", "line 2: 'cm' has no value" },
    { "[itapi]\ncm = sometimes\n", "line 2: cm: 'sometimes' is not auto, host or provider" },
    { "[itapi]\nprovider = emul,,iwarp\n", "line 2: provider: 'emul,,iwarp' has an empty name between commas" },
    { "[interface x]\nprovider = emul,iwarp\n", "line 2: provider: 'emul,iwarp' is not a provider name" },
    { "[interface x]\ndevice = emul 0\n", "line 2: device: 'emul 0' holds ' '" },
    { "[itapi]\njust words\n", "line 2: 'just words' is neither a [section], a key = value nor a # comment" },
    { "[itapi]\n= emul\n", "line 2: '= emul' has no key before the '='" },
  };
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    kal_conf_t *c = NULL;
    g_autofree char *why = NULL;
    g_assert_cmpint(kal_conf_parse(bad[i].text, "t.conf", &c, &why), ==, RNICPI_EINVAL);
    g_assert_null(c);
    g_assert_nonnull(why);
    g_assert_true(g_str_has_prefix(why, "configuration file t.conf, line "));
    if (strstr(why, bad[i].says) == NULL)
      g_error("file '%s': message '%s' lacks '%s'", bad[i].text, why, bad[i].says);
  }
}

/* A private directory holding one file of @text, named by ITAPI_CONF. */
static char *
conf_file(const char *text, char **dir)
{
  *dir = g_dir_make_tmp("itapi-conf-XXXXXX", NULL);
  g_assert_nonnull(*dir);
  char *file = g_build_filename(*dir, "itapi.conf", NULL);
  g_assert_true(g_file_set_contents(file, text, -1, NULL));
  g_assert_cmpint(g_chmod(file, 0644), ==, 0);
  g_setenv("ITAPI_CONF", file, TRUE);
  return file;
}

static void
conf_file_remove(char *file, char *dir)
{
  g_unsetenv("ITAPI_CONF");
  g_chmod(dir, 0700);
  g_unlink(file);
  g_rmdir(dir);
  g_free(file);
  g_free(dir);
}

/* In a subprocess: the stack refused its file, saying @says, and offers no
 * interface; it_ia_create() repeats why. */
static void
assert_refused(const char *says)
{
  const char *why = itx_conf_error();
  g_assert_nonnull(why);
  if (strstr(why, says) == NULL)
    g_error("message '%s' lacks '%s'", why, says);
  size_t n = 0, total = 99;
  it_interface_list(NULL, &n, &total);
  g_assert_cmpuint(total, ==, 0);
  it_ia_handle_t ia;
  g_assert_cmpint(it_ia_create("emul0", 2, 1, &ia), ==, IT_ERR_INVALID_NAME);
  g_assert_nonnull(strstr(itx_error_detail(), says));
}

static void
test_file_unsafe(void)
{
  g_test_summary("itapi.conf: a file another user could rewrite (writable by its group or others, "
                 "or in a directory that is) is refused as the host policy is, naming the file, its "
                 "mode and the chmod that mends it; no interface is offered");
  if (g_test_subprocess()) {
    assert_refused(g_getenv("CONF_TEST_SAYS"));
    return;
  }
  char *dir;
  char *file = conf_file("[interface vp_softrdma]\ndevice = emul0\n", &dir);
  struct {
    mode_t file_mode, dir_mode;
    char *says;
  } cases[] = {
    { 0664, 0700, g_strdup_printf("configuration file %s is refused: it is writable by its group (mode 0664",
                                  file) },
    { 0646, 0700, g_strdup_printf("it is writable by others (mode 0646, owner uid %u), so another user could "
                                  "rewrite its settings; mend it (`chmod go-w %s`)", (unsigned) geteuid(), file) },
    { 0644, 0777, g_strdup_printf("its directory %s is writable by its group and others (mode 0777", dir) },
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_assert_cmpint(g_chmod(file, (int) cases[i].file_mode), ==, 0);
    g_assert_cmpint(g_chmod(dir, (int) cases[i].dir_mode), ==, 0);
    g_setenv("CONF_TEST_SAYS", cases[i].says, TRUE);
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    g_test_trap_assert_stderr("*until then no interface is offered*");
    g_free(cases[i].says);
  }
  g_unsetenv("CONF_TEST_SAYS");
  conf_file_remove(file, dir);
}

static void
test_file_broken(void)
{
  g_test_summary("itapi.conf: a wrong line is reported at start-up with the file and the line, and "
                 "until it is fixed no interface is offered");
  if (g_test_subprocess()) {
    assert_refused(", line 3: 'devise' is not a key of [interface vp_softrdma]");
    g_assert_nonnull(strstr(itx_conf_error(), "fix that line (itapi.conf(5)), or set ITAPI_CONF to "
                            "another file (ITAPI_CONF= for none)"));
    return;
  }
  char *dir;
  char *file = conf_file("# SKV\n[interface vp_softrdma]\ndevise = emul0\n", &dir);
  g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
  g_autofree char *logged = g_strdup_printf("*configuration file %s, line 3: 'devise' is not a key*", file);
  g_test_trap_assert_stderr(logged);
  conf_file_remove(file, dir);
}

static void
test_file_none(void)
{
  g_test_summary("itapi.conf: ITAPI_CONF= and ITAPI_CONF=/dev/null read no file; a file ITAPI_CONF "
                 "names that does not exist is an error");
  if (g_test_subprocess()) {
    const char *want = g_getenv("CONF_TEST_SAYS");
    if (*want != '\0') {
      assert_refused(want);
      return;
    }
    g_assert_null(itx_conf_error());
    itx_setting_t s;
    g_assert_cmpint(itx_setting_get(0, &s), ==, IT_SUCCESS);
    g_assert_cmpstr(s.key, ==, "file");
    g_assert_cmpstr(s.value, ==, "none");
    g_assert_cmpstr(s.origin, ==, "ITAPI_CONF");
    g_assert_nonnull(kal_iface_find("emul0"));
    return;
  }
  const char *cases[][2] = {
    { "", "" },
    { "/dev/null", "" },
    { "/nonexistent/itapi.conf", "configuration file /nonexistent/itapi.conf cannot be read (No such file" },
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_setenv("ITAPI_CONF", cases[i][0], TRUE);
    g_setenv("CONF_TEST_SAYS", cases[i][1], TRUE);
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
  }
  g_unsetenv("ITAPI_CONF");
  g_unsetenv("CONF_TEST_SAYS");
}

/* The setting of @scope and @key in force, or fail. */
static itx_setting_t
setting(const char *scope, const char *key)
{
  for (size_t i = 0; i < itx_setting_count(); i++) {
    itx_setting_t s;
    g_assert_cmpint(itx_setting_get(i, &s), ==, IT_SUCCESS);
    if (strcmp(s.scope, scope) == 0 && strcmp(s.key, key) == 0)
      return s;
  }
  g_error("no setting %s %s", scope, key);
}

static const char alias_conf[] =
  "[itapi]\n"
  "provider = emul\n"
  "\n"
  "[interface vp_softrdma]\n"
  "device = emul0\n"
  "cm = host\n"
  "[interface rxe_alias]\n"
  "device = rxe0\n";

static void
test_alias(void)
{
  g_test_summary("itapi.conf: an alias is listed after the devices with its device's transport, "
                 "opens that device, and itapi-info's settings say the file and line of each value; "
                 "an alias of an absent device is left out and it_ia_create says why");
  if (g_test_subprocess()) {
    g_assert_null(itx_conf_error());
    it_interface_t ifs[32];
    size_t n = G_N_ELEMENTS(ifs), total = 0;
    it_interface_list(ifs, &n, &total);
    g_assert_cmpuint(n, ==, total);
    g_assert_cmpstr(ifs[n - 1].name, ==, "vp_softrdma");
    const kal_iface_t *a = kal_iface_find("vp_softrdma"), *d = kal_iface_find("emul0");
    g_assert_nonnull(a);
    g_assert_nonnull(d);
    g_assert_cmpstr(a->alias_of, ==, "emul0");
    g_assert_cmpstr(a->device, ==, "emul0");
    g_assert_cmpstr(a->cm, ==, "host");
    g_assert_null(d->cm);
    g_assert_cmpint(ifs[n - 1].transport_type, ==, (it_transport_type_t) d->transport);
    g_assert_null(kal_iface_find("emul-iw0-not-an-alias"));

    it_ia_handle_t ia;
    g_assert_cmpint(it_ia_create("vp_softrdma", 2, 1, &ia), ==, IT_SUCCESS);
    g_assert_cmpint(it_ia_free(ia), ==, IT_SUCCESS);
    g_assert_cmpint(it_ia_create("rxe_alias", 2, 1, &ia), ==, IT_ERR_INVALID_NAME);
    g_assert_nonnull(strstr(itx_error_detail(), "names device 'rxe0', which no usable provider offers"));

    g_autofree char *line2 = g_strdup_printf("%s, line 2", g_getenv("ITAPI_CONF"));
    g_autofree char *line5 = g_strdup_printf("%s, line 5", g_getenv("ITAPI_CONF"));
    itx_setting_t s = setting("itapi", "file");
    g_assert_cmpstr(s.value, ==, g_getenv("ITAPI_CONF"));
    g_assert_cmpstr(s.origin, ==, "ITAPI_CONF");
    s = setting("itapi", "provider");
    g_assert_cmpstr(s.value, ==, "emul");
    g_assert_cmpstr(s.origin, ==, line2);
    s = setting("itapi", "cm");
    g_assert_cmpstr(s.value, ==, "auto");
    g_assert_cmpstr(s.origin, ==, "default");
    s = setting("interface vp_softrdma", "device");
    g_assert_cmpstr(s.value, ==, "emul0");
    g_assert_cmpstr(s.origin, ==, line5);
    for (size_t i = 0; i < itx_provider_count(); i++) {
      itx_provider_info_t p;
      g_assert_cmpint(itx_provider_get(i, &p), ==, IT_SUCCESS);
      if (strcmp(p.name, "iwarp") == 0) {
        g_assert_false(p.usable);
        g_autofree char *says = g_strdup_printf("not selected by %s (provider = emul)", line2);
        g_assert_cmpstr(p.reason, ==, says);
      }
    }
    return;
  }
  char *dir;
  char *file = conf_file(alias_conf, &dir);
  g_unsetenv("ITAPI_PROVIDER");
  g_unsetenv("ITAPI_CM");
  g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
  conf_file_remove(file, dir);
}

static void
test_env_override(void)
{
  g_test_summary("itapi.conf: ITAPI_PROVIDER and ITAPI_CM override the file's provider and cm, "
                 "and the settings say so");
  if (g_test_subprocess()) {
    itx_setting_t s = setting("itapi", "provider");
    g_assert_cmpstr(s.value, ==, "iwarp");
    g_assert_cmpstr(s.origin, ==, "ITAPI_PROVIDER");
    s = setting("interface vp_softrdma", "cm");
    g_assert_cmpstr(s.value, ==, "provider");
    g_assert_cmpstr(s.origin, ==, "ITAPI_CM");
    /* emul is not loaded: its device, and so the alias, is absent. */
    g_assert_null(kal_iface_find("emul0"));
    it_ia_handle_t ia;
    g_assert_cmpint(it_ia_create("vp_softrdma", 2, 1, &ia), ==, IT_ERR_INVALID_NAME);
    g_assert_nonnull(strstr(itx_error_detail(), "names device 'emul0', which no usable provider offers"));
    g_assert_nonnull(kal_iface_find("iwarp0"));
    return;
  }
  char *dir;
  char *file = conf_file(alias_conf, &dir);
  g_setenv("ITAPI_PROVIDER", "iwarp", TRUE);
  g_setenv("ITAPI_CM", "provider", TRUE);
  g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
  g_unsetenv("ITAPI_PROVIDER");
  g_unsetenv("ITAPI_CM");
  conf_file_remove(file, dir);
}

static void
test_alias_takes_device_name(void)
{
  g_test_summary("itapi.conf: an alias that takes a device's name for another device is refused "
                 "at start-up with its line");
  if (g_test_subprocess()) {
    assert_refused("line 1: [interface emul-iw0] is the name of a device, so it cannot be an alias of emul0");
    return;
  }
  char *dir;
  char *file = conf_file("[interface emul-iw0]\ndevice = emul0\n", &dir);
  g_setenv("ITAPI_PROVIDER", "emul", TRUE);
  g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
  g_unsetenv("ITAPI_PROVIDER");
  conf_file_remove(file, dir);
}

static void
test_alias_moves_data(void)
{
  g_test_summary("itapi.conf: an IT-API program that opens its hard-coded interface name "
                 "vp_softrdma, an alias of emul0, connects and lands a Send and an RDMA Write, "
                 "every byte checked");
  if (g_test_subprocess()) {
    g_setenv("ITAPI_CONF_IA", "vp_softrdma", TRUE);
    conf_pair_t p;
    conf_buf_t src, dst, wsrc, wdst;
    conf_pair_open(&p);
    conf_pair_connect(&p, NULL, 0, NULL, 0);
    it_mem_priv_t local = IT_PRIV_LOCAL;
    conf_buf_new(&p.a, &src, 4096, local, IT_ADDR_MODE_ABSOLUTE);
    conf_buf_new(&p.p, &dst, 4096, local, IT_ADDR_MODE_ABSOLUTE);
    conf_buf_new(&p.a, &wsrc, 8192, local, IT_ADDR_MODE_ABSOLUTE);
    conf_buf_new(&p.p, &wdst, 8192, local | IT_PRIV_REMOTE_WRITE, IT_ADDR_MODE_ABSOLUTE);
    conf_buf_fill(&src, 7);
    conf_buf_fill(&wsrc, 9);

    it_lmr_triplet_t rs = conf_seg(&dst, 0, dst.len), ss = conf_seg(&src, 0, src.len);
    conf_ok(it_post_recv(p.p.ep, &rs, 1, 1, IT_COMPLETION_FLAG));
    conf_ok(it_post_send(p.a.ep, &ss, 1, 2, IT_COMPLETION_FLAG));
    it_dto_cmpl_event_t r = conf_dto(p.p.dto, IT_DTO_RC_RECV_CMPL_EVENT, IT_DTO_SUCCESS, 1);
    g_assert_cmpuint(r.transferred_length, ==, 4096);
    conf_dto(p.a.dto, IT_DTO_SEND_CMPL_EVENT, IT_DTO_SUCCESS, 2);
    conf_buf_check(&dst, 0, 4096, 7);
    conf_buf_check_guards(&dst);

    it_lmr_triplet_t ws = conf_seg(&wsrc, 0, wsrc.len);
    conf_ok(it_post_rdma_write(p.a.ep, &ws, 1, 3, IT_COMPLETION_FLAG,
                               it_make_rdma_addr_absolute(wdst.data), wdst.ctx));
    conf_dto(p.a.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, IT_DTO_SUCCESS, 3);
    conf_placed(&p.a, it_make_rdma_addr_absolute(wdst.data), wdst.ctx);
    conf_buf_check(&wdst, 0, 8192, 9);
    conf_buf_check_guards(&wdst);

    conf_buf_free(&src);
    conf_buf_free(&dst);
    conf_buf_free(&wsrc);
    conf_buf_free(&wdst);
    conf_pair_close(&p);
    return;
  }
  char *dir;
  char *file = conf_file("# IBM SoftRDMA's name, on the emulated RNIC\n"
                         "[interface vp_softrdma]\n"
                         "device = emul0\n", &dir);
  g_setenv("ITAPI_PROVIDER", "emul", TRUE);
  g_test_trap_subprocess(NULL, 60 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_INHERIT_STDERR);
  g_test_trap_assert_passed();
  g_unsetenv("ITAPI_PROVIDER");
  conf_file_remove(file, dir);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/kal/conf/parse/good", test_parse_good);
  g_test_add_func("/kal/conf/parse/errors", test_parse_errors);
  g_test_add_func("/kal/conf/file/unsafe", test_file_unsafe);
  g_test_add_func("/kal/conf/file/broken", test_file_broken);
  g_test_add_func("/kal/conf/file/none", test_file_none);
  g_test_add_func("/kal/conf/alias/opens-device", test_alias);
  g_test_add_func("/kal/conf/alias/env-override", test_env_override);
  g_test_add_func("/kal/conf/alias/takes-device-name", test_alias_takes_device_name);
  g_test_add_func("/kal/conf/alias/moves-data", test_alias_moves_data);
  return g_test_run();
}
