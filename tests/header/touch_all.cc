// touch_all.cc - C++ completeness test of <it_api.h> (2.1 bindings).
//
// Compiles every check of touch_all.c as C++ (that file is written in the
// common subset of C11 and C++): in C++ a function pointer of the wrong
// prototype, an enumerator assigned to the wrong enumeration type or a
// missing field is a hard error. On top of that it checks, at compile time,
// properties that only C++ can express: exact types of typedefs and fields,
// distinct handle types, and that the binding macros select the 2.1
// variants. At run time it only prints the count of names touched.

#define ITAPI_ENABLE_V21_BINDINGS
#define TOUCH_ALL_NO_MAIN
#include "touch_all.c"

#include <cstdint>
#include <cstdio>
#include <type_traits>

namespace {

// it_status_t and the other enumerations are distinct enum types.
static_assert(std::is_enum<it_status_t>::value, "it_status_t is an enum");
static_assert(std::is_enum<it_event_type_t>::value, "it_event_type_t is an enum");
static_assert(!std::is_same<it_mem_priv_t, it_dto_flags_t>::value,
              "enumerations are distinct types");

// Scalar typedefs have the types of the specification.
static_assert(std::is_same<it_dto_cookie_t, std::uint64_t>::value,
              "it_dto_cookie_t is uint64_t");
static_assert(std::is_same<it_rmr_context_t, std::uint64_t>::value,
              "it_rmr_context_t is uint64_t");
static_assert(std::is_same<it_length_t, std::uint64_t>::value,
              "it_length_t is uint64_t");
static_assert(std::is_same<it_rdma_addr_t, std::uint64_t>::value,
              "it_rdma_addr_t is uint64_t");
static_assert(std::is_same<it_cn_est_identifier_t, std::uint64_t>::value,
              "it_cn_est_identifier_t is uint64_t");
static_assert(std::is_same<it_ud_svc_req_identifier_t, std::uint64_t>::value,
              "it_ud_svc_req_identifier_t is uint64_t");
static_assert(std::is_same<it_ib_serviceid_t, std::uint64_t>::value,
              "it_ib_serviceid_t is uint64_t");
static_assert(std::is_same<it_ud_ep_id_t, std::uint32_t>::value,
              "it_ud_ep_id_t is uint32_t");
static_assert(std::is_same<it_ud_ep_key_t, std::uint32_t>::value,
              "it_ud_ep_key_t is uint32_t");
static_assert(std::is_same<it_ib_gid_t, struct in6_addr>::value,
              "it_ib_gid_t is struct in6_addr");
static_assert(std::is_same<it_handle_t, void *>::value,
              "it_handle_t is void *");

// Handles are pointers to distinct incomplete structures that convert
// implicitly to it_handle_t.
static_assert(std::is_pointer<it_ep_handle_t>::value, "handles are pointers");
static_assert(!std::is_same<it_ep_handle_t, it_evd_handle_t>::value,
              "handle types are distinct");
static_assert(!std::is_same<it_lmr_handle_t, it_rmr_handle_t>::value,
              "handle types are distinct");
static_assert(std::is_convertible<it_ia_handle_t, it_handle_t>::value &&
              std::is_convertible<it_pz_handle_t, it_handle_t>::value &&
              std::is_convertible<it_evd_handle_t, it_handle_t>::value &&
              std::is_convertible<it_ep_handle_t, it_handle_t>::value &&
              std::is_convertible<it_listen_handle_t, it_handle_t>::value &&
              std::is_convertible<it_lmr_handle_t, it_handle_t>::value &&
              std::is_convertible<it_rmr_handle_t, it_handle_t>::value &&
              std::is_convertible<it_srq_handle_t, it_handle_t>::value &&
              std::is_convertible<it_addr_handle_t, it_handle_t>::value &&
              std::is_convertible<it_ud_svc_req_handle_t, it_handle_t>::value,
              "every handle converts to it_handle_t");

// Field types that applications rely on.
static_assert(std::is_same<decltype(it_dto_cmpl_event_t::cookie),
                           it_dto_cookie_t>::value, "cookie type");
static_assert(std::is_same<decltype(it_conn_request_event_t::private_data),
                           unsigned char[IT_MAX_PRIV_DATA]>::value,
              "private data array");
static_assert(std::is_same<decltype(it_interface_t::name),
                           char[IT_INTERFACE_NAME_SIZE]>::value,
              "interface name array");
static_assert(std::is_same<decltype(it_path_t::remote),
                           decltype(it_path_t::u)>::value,
              "remote and u are the same union");
static_assert(std::is_same<decltype(it_rmr_param_t::linked),
                           it_boolean_t>::value,
              "2.1 bindings name the field linked");
static_assert(std::is_same<decltype(it_rc_only_attributes_t::rdma_read_inflight_incoming),
                           std::uint32_t>::value,
              "1.0 field alias");

// Every event structure and the event union are plain data.
static_assert(std::is_trivial<it_event_t>::value &&
              std::is_standard_layout<it_event_t>::value,
              "it_event_t is plain data");
static_assert(std::is_trivial<it_ia_info_t>::value, "it_ia_info_t is plain data");
static_assert(std::is_trivial<it_path_t>::value, "it_path_t is plain data");

// The generic names select the 2.1 variants.
static_assert(std::is_same<decltype(&it_lmr_create),
                           decltype(&it_lmr_create21)>::value,
              "it_lmr_create maps to it_lmr_create21");
static_assert(std::is_same<decltype(&it_rmr_create),
                           decltype(&it_rmr_create20)>::value,
              "it_rmr_create maps to it_rmr_create20");
static_assert(std::is_same<decltype(&it_rmr_bind),
                           decltype(&it_rmr_link)>::value,
              "it_rmr_bind maps to it_rmr_link");

// Return types of the functions that do not return it_status_t.
static_assert(std::is_same<decltype(it_interface_list(nullptr, nullptr, nullptr)),
                           void>::value, "it_interface_list returns void");
static_assert(std::is_same<decltype(it_ia_info_free(nullptr)), void>::value,
              "it_ia_info_free returns void");
static_assert(std::is_same<decltype(it_hton64(0)), std::uint64_t>::value,
              "it_hton64 returns uint64_t");
static_assert(std::is_same<decltype(it_make_rdma_addr_relative(0)),
                           it_rdma_addr_t>::value,
              "it_make_rdma_addr_relative returns it_rdma_addr_t");

// The status enumeration is the list of it_status_list.h, in order.
#define COUNT_STATUS_(name, message) +1
constexpr int status_count = 0 IT_STATUS_LIST(COUNT_STATUS_);
#undef COUNT_STATUS_
static_assert(status_count == 107, "107 status codes");
static_assert(IT_SUCCESS == 0 && IT_ERR_WAITER_LIMIT == status_count - 1,
              "statuses are numbered in list order");

}  // namespace

int main()
{
    unsigned long n = touch_all();

    std::printf("it_api.h (C++, 2.1 bindings): touched %lu names "
                "(%lu functions), checksum %llx\n",
                n, static_cast<unsigned long>(num_functions), checksum);
    return n != 0 ? 0 : 1;
}
