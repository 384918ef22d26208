/*
 * tests/app/ib_app_diag.c: statuses and events in words for ib-app (see
 * ib_app_diag.h), through the stack's itx_* names.
 *
 * SPDX-License-Identifier: MIT
 */
#include "ib_app_diag.h"

#include <stdio.h>

#include <itx.h>

const char *
ib_app_status_text(it_status_t st, char *buf, size_t len)
{
  const char *detail = itx_error_detail();
  snprintf(buf, len, "%s (%s)%s%s", itx_status_name(st), itx_status_message(st),
           *detail ? ": " : "", detail);
  return buf;
}

const char *
ib_app_dto_status_text(it_dto_status_t st, char *buf, size_t len)
{
  snprintf(buf, len, "%s", itx_dto_status_name(st));
  return buf;
}

const char *
ib_app_event_name(it_event_type_t ev)
{
  return itx_event_name(ev);
}
