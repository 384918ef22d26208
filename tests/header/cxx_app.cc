// An IT-API application in C++ with the default (1.0) bindings, as a port of
// older code would be: it includes <it_api.h> unchanged, connects two
// endpoints over the first interface, sends a message each way and checks
// the bytes.  It exercises the 1.0 names at run time: it_lmr_create with
// the 1.0 argument list, it_make_rdma_addr, it_lmr_sync_rdma_read.
//
// SPDX-License-Identifier: MIT

#include <it_api.h>

#include <arpa/inet.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

void check(it_status_t st, const char *what)
{
  if (st != IT_SUCCESS) {
    std::fprintf(stderr, "cxx_app: %s failed with status %d\n", what, static_cast<int>(st));
    std::exit(1);
  }
}

it_event_t wait_for(it_evd_handle_t evd, it_event_type_t want)
{
  it_event_t ev;
  size_t more = 0;
  check(it_evd_wait(evd, 5000000, &ev, &more), "it_evd_wait");
  if (ev.event_number != want) {
    std::fprintf(stderr, "cxx_app: got event 0x%x, wanted 0x%x\n",
                 static_cast<unsigned>(ev.event_number), static_cast<unsigned>(want));
    std::exit(1);
  }
  return ev;
}

struct Side {
  it_ia_handle_t ia = IT_NULL_HANDLE;
  it_pz_handle_t pz = IT_NULL_HANDLE;
  it_evd_handle_t dto = IT_NULL_HANDLE, cm = IT_NULL_HANDLE, req = IT_NULL_HANDLE;
  it_ep_handle_t ep = IT_NULL_HANDLE;
  it_lmr_handle_t lmr = IT_NULL_HANDLE;
  it_rmr_context_t ctx = 0;
  std::vector<unsigned char> buf = std::vector<unsigned char>(256);

  explicit Side(const char *name)
  {
    check(it_ia_create(name, 1, 0, &ia), "it_ia_create 1.0");
    check(it_pz_create(ia, &pz), "it_pz_create");
    check(it_evd_create(ia, IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 16, 1, IT_NULL_HANDLE,
                        &dto, nullptr), "dto evd");
    check(it_evd_create(ia, IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 8, 1, IT_NULL_HANDLE,
                        &cm, nullptr), "cm evd");
    check(it_evd_create(ia, IT_CM_REQ_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 8, 1, IT_NULL_HANDLE,
                        &req, nullptr), "req evd");
    // The 1.0 binding: no address mode, no I/O buffer list.
    check(it_lmr_create(pz, buf.data(), buf.size(), IT_PRIV_LOCAL, IT_LMR_FLAG_NONE, 0, &lmr, &ctx),
          "it_lmr_create (1.0)");
    it_ep_attributes_t attr;
    std::memset(&attr, 0, sizeof(attr));
    attr.max_dto_payload_size = buf.size();
    attr.max_request_dtos = 4;
    attr.max_recv_dtos = 4;
    attr.max_send_segments = 1;
    attr.max_recv_segments = 1;
    attr.srv.rc.rdma_read_inflight_incoming = 1; // 1.0 spelling of rdma_read_ird
    attr.srv.rc.rdma_read_inflight_outgoing = 1; // 1.0 spelling of rdma_read_ord
    check(it_ep_rc_create(pz, dto, dto, cm, IT_EP_NO_FLAG, &attr, &ep), "it_ep_rc_create");
  }

  ~Side() { it_ia_free(ia); }

  it_lmr_triplet_t seg(size_t len)
  {
    it_lmr_triplet_t t;
    t.lmr = lmr;
    t.addr.abs = buf.data();
    t.length = len;
    return t;
  }
};

} // namespace

int main()
{
  it_interface_t ifs[4];
  size_t n = 4, total = 0;
  it_interface_list(ifs, &n, &total);
  if (n == 0) {
    std::fprintf(stderr, "cxx_app: no interface\n");
    return 1;
  }
  Side server(ifs[0].name), client(ifs[0].name);

  it_conn_qual_t qual;
  std::memset(&qual, 0, sizeof(qual));
  qual.type = IT_IANA_PORT;
  it_listen_handle_t lh;
  check(it_listen_create(server.ia, 0, server.req, IT_LISTEN_NO_FLAG, &qual, &lh), "it_listen_create");

  // The server is reached at the interface's own first address (an RNIC
  // is reached only at its port's addresses); 127.0.0.1 if it lists none.
  it_net_addr_t addr;
  std::memset(&addr, 0, sizeof(addr));
  addr.addr_type = IT_IPV4;
  addr.addr.ipv4.s_addr = htonl(INADDR_LOOPBACK);
  it_ia_info_t *info = nullptr;
  check(it_ia_query(client.ia, &info), "it_ia_query");
  if (info->num_spigots > 0 && info->spigot_info[0].num_net_addr > 0)
    addr = info->spigot_info[0].net_addr[0];
  it_ia_info_free(info);
  it_path_t path;
  size_t npath = 1, tpath = 0;
  check(it_get_pathinfo(client.ia, 0, &addr, &npath, &tpath, &path), "it_get_pathinfo");

  it_lmr_triplet_t rseg = client.seg(client.buf.size());
  check(it_post_recv(client.ep, &rseg, 1, 7, IT_COMPLETION_FLAG), "client it_post_recv");
  it_conn_attributes_t ca;
  std::memset(&ca, 0, sizeof(ca));
  const unsigned char hello[] = "hello from C++";
  check(it_ep_connect(client.ep, &path, &ca, &qual, IT_CONNECT_FLAG_TWO_WAY, hello, sizeof(hello)),
        "it_ep_connect");
  it_event_t req = wait_for(server.req, IT_CM_REQ_CONN_REQUEST_EVENT);
  if (std::memcmp(req.conn_req.private_data, hello, sizeof(hello)) != 0) {
    std::fprintf(stderr, "cxx_app: private data differs\n");
    return 1;
  }
  it_lmr_triplet_t sseg = server.seg(server.buf.size());
  check(it_post_recv(server.ep, &sseg, 1, 8, IT_COMPLETION_FLAG), "server it_post_recv");
  check(it_ep_accept(server.ep, req.conn_req.cn_est_id, nullptr, 0), "it_ep_accept");
  wait_for(client.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
  wait_for(server.cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT);

  for (size_t i = 0; i < client.buf.size(); i++)
    client.buf[i] = static_cast<unsigned char>(i ^ 0x5a);
  it_lmr_triplet_t out = client.seg(100);
  check(it_lmr_sync_rdma_read(&out, 1), "it_lmr_sync_rdma_read");
  check(it_post_send(client.ep, &out, 1, 9, IT_COMPLETION_FLAG), "it_post_send");
  it_event_t got = wait_for(server.dto, IT_DTO_RC_RECV_CMPL_EVENT);
  if (got.dto_cmpl.dto_status != IT_DTO_SUCCESS || got.dto_cmpl.transferred_length != 100 ||
      got.dto_cmpl.cookie != 8) {
    std::fprintf(stderr, "cxx_app: bad receive completion\n");
    return 1;
  }
  for (size_t i = 0; i < 100; i++)
    if (server.buf[i] != static_cast<unsigned char>(i ^ 0x5a)) {
      std::fprintf(stderr, "cxx_app: byte %zu differs\n", i);
      return 1;
    }
  wait_for(client.dto, IT_DTO_SEND_CMPL_EVENT);
  if (it_make_rdma_addr(client.buf.data()) != reinterpret_cast<it_rdma_addr_t>(client.buf.data()))
    return 1;
  check(it_ep_disconnect(client.ep, nullptr, 0), "it_ep_disconnect");
  wait_for(server.cm, IT_CM_MSG_CONN_DISCONNECT_EVENT);
  check(it_listen_free(lh), "it_listen_free");
  std::printf("cxx_app: connected, moved and verified 100 bytes over %s with 1.0 bindings\n",
              ifs[0].name);
  return 0;
}
