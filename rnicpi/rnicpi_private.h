/* Private to rnicpi/: the completed copy of a provider's tables. */
#ifndef RNICPI_PRIVATE_H
#define RNICPI_PRIVATE_H

#include "rnicpi.h"

typedef struct rnicpi_full {
  rnicpi_provider_t desc;
  rnicpi_device_ops_t device;
  rnicpi_mem_ops_t mem;
  rnicpi_queue_ops_t queue;
  rnicpi_data_ops_t data;
  rnicpi_cm_ops_t cm;
  rnicpi_sock_ops_t sock;
  rnicpi_srq_ops_t srq;
  rnicpi_mw_ops_t mw;
  rnicpi_ud_ops_t ud;
} rnicpi_full_t;

void rnicpi_complete_tables(const rnicpi_provider_t *in, rnicpi_full_t *out);

#endif
