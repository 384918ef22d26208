/*
 * Status and event names, generated from the lists in the public headers.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stddef.h>

#include "itx.h"

#define COUNT_ONE(name, msg) +1
static const char *const status_names[0 IT_STATUS_LIST(COUNT_ONE)] = {
#define NAME(name, msg) #name,
  IT_STATUS_LIST(NAME)
#undef NAME
};
static const char *const status_messages[0 IT_STATUS_LIST(COUNT_ONE)] = {
#define MSG(name, msg) msg,
  IT_STATUS_LIST(MSG)
#undef MSG
};

const char *
itx_status_name(it_status_t status)
{
  size_t i = (size_t) status;
  return i < sizeof(status_names) / sizeof(status_names[0]) ? status_names[i] : "IT_ERR_UNKNOWN";
}

const char *
itx_status_message(it_status_t status)
{
  size_t i = (size_t) status;
  return i < sizeof(status_messages) / sizeof(status_messages[0]) ? status_messages[i] : "unknown status";
}

const char *
itx_dto_status_name(it_dto_status_t status)
{
  switch (status) {
#define DS(n) case n: return #n;
  DS(IT_DTO_SUCCESS) DS(IT_DTO_ERR_LOCAL_LENGTH) DS(IT_DTO_ERR_LOCAL_EP)
  DS(IT_DTO_ERR_LOCAL_PROTECTION) DS(IT_DTO_ERR_FLUSHED) DS(IT_RMR_OPERATION_FAILED)
  DS(IT_DTO_ERR_BAD_RESPONSE) DS(IT_DTO_ERR_REMOTE_ACCESS) DS(IT_DTO_ERR_REMOTE_RESPONDER)
  DS(IT_DTO_ERR_TRANSPORT) DS(IT_DTO_ERR_RECEIVER_NOT_READY) DS(IT_DTO_ERR_PARTIAL_PACKET)
  DS(IT_DTO_ERR_LOCAL_MM_OPERATION)
#undef DS
  }
  return "IT_DTO_ERR_UNKNOWN";
}

const char *
itx_event_name(it_event_type_t event)
{
  switch (event) {
#define EV(n) case n: return #n;
  EV(IT_DTO_SEND_CMPL_EVENT) EV(IT_DTO_RC_RECV_CMPL_EVENT) EV(IT_DTO_UD_RECV_CMPL_EVENT)
  EV(IT_DTO_RDMA_WRITE_CMPL_EVENT) EV(IT_DTO_RDMA_READ_CMPL_EVENT) EV(IT_RMR_LINK_CMPL_EVENT)
  EV(IT_DTO_FETCH_ADD_CMPL_EVENT) EV(IT_DTO_CMP_SWAP_CMPL_EVENT) EV(IT_LMR_LINK_CMPL_EVENT)
  EV(IT_CM_REQ_CONN_REQUEST_EVENT) EV(IT_CM_REQ_UD_SERVICE_REQUEST_EVENT)
  EV(IT_CM_MSG_CONN_ACCEPT_ARRIVAL_EVENT) EV(IT_CM_MSG_CONN_ESTABLISHED_EVENT)
  EV(IT_CM_MSG_CONN_DISCONNECT_EVENT) EV(IT_CM_MSG_CONN_PEER_REJECT_EVENT)
  EV(IT_CM_MSG_CONN_NONPEER_REJECT_EVENT) EV(IT_CM_MSG_CONN_BROKEN_EVENT)
  EV(IT_CM_MSG_UD_SERVICE_REPLY_EVENT)
  EV(IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE) EV(IT_ASYNC_AFF_EP_FAILURE)
  EV(IT_ASYNC_AFF_EP_BAD_TRANSPORT_OPCODE) EV(IT_ASYNC_AFF_EP_REQ_DROPPED)
  EV(IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION) EV(IT_ASYNC_AFF_EP_RDMAW_CORRUPT_DATA)
  EV(IT_ASYNC_AFF_EP_RDMAR_ACCESS_VIOLATION) EV(IT_ASYNC_AFF_EP_LOCAL_ACCESS_VIOLATION)
  EV(IT_ASYNC_AFF_EP_L_RECV_ACCESS_VIOLATION) EV(IT_ASYNC_AFF_EP_L_IRRQ_ACCESS_VIOLATION)
  EV(IT_ASYNC_AFF_EP_L_TRANSPORT_ERROR) EV(IT_ASYNC_AFF_EP_L_LLP_ERROR)
  EV(IT_ASYNC_AFF_EP_R_ERROR) EV(IT_ASYNC_AFF_EP_R_ACCESS_VIOLATION)
  EV(IT_ASYNC_AFF_EP_R_RECV_ACCESS_VIOLATION) EV(IT_ASYNC_AFF_EP_R_RECV_LENGTH_ERROR)
  EV(IT_ASYNC_AFF_EP_SOFT_HI_WATERMARK) EV(IT_ASYNC_AFF_EP_SRQ_ERROR)
  EV(IT_ASYNC_AFF_SRQ_LOW_WATERMARK)
  EV(IT_ASYNC_UNAFF_SPIGOT_ONLINE) EV(IT_ASYNC_UNAFF_SPIGOT_OFFLINE)
  EV(IT_ASYNC_UNAFF_SEVD_ENQUEUE_FAILURE)
  EV(IT_SOFTWARE_EVENT) EV(IT_AEVD_NOTIFICATION_EVENT)
#undef EV
  default:
    return "IT_EVENT_UNKNOWN";
  }
}

uint64_t
it_hton64(uint64_t hostint)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return __builtin_bswap64(hostint);
#else
  return hostint;
#endif
}

uint64_t
it_ntoh64(uint64_t netint)
{
  return it_hton64(netint);
}
