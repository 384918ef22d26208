/*
 * tests/app/ib_app_diag.h: statuses and events of IT-API in words, for
 * ib-app's messages.  The application itself calls only the standard
 * IT-API; this is the one place that uses the stack's own names
 * (itx_status_name() and friends), so that a failure in the test log says
 * which status came and why.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef IB_APP_DIAG_H
#define IB_APP_DIAG_H

#include <stddef.h>

#include <it_api.h>

/* "IT_ERR_RESOURCE_IRD (message): detail of the last failed call", in
 * @buf of @len bytes.  Call it first after the failed call: the detail
 * belongs to this thread's last failure. */
const char *ib_app_status_text(it_status_t st, char *buf, size_t len);

/* "IT_DTO_ERR_FLUSHED" and the like, in @buf of @len bytes. */
const char *ib_app_dto_status_text(it_dto_status_t st, char *buf, size_t len);

/* "IT_CM_MSG_CONN_ESTABLISHED_EVENT" and the like. */
const char *ib_app_event_name(it_event_type_t ev);

#endif /* IB_APP_DIAG_H */
