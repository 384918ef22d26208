/*
 * vp/iwarp transmit state, without a socket: what iw_tx_drop keeps of a
 * batch whose writes stopped part way.  Run by meson as iwarp-tx-drop.
 *
 * SPDX-License-Identifier: MIT
 */
#include <glib.h>
#include <string.h>

#include "rnicpi.h"
#include "iw.h"

/* A batch of three 100-byte FPDUs in one piece of memory, @sent bytes of
 * it written, the first @accounted FPDUs accounted (tx_account). */
static void
batch_set(iw_qp_t *qp, const uint8_t *data, size_t sent, int accounted)
{
  iw_txbatch_t *b = g_new0(iw_txbatch_t, 1);
  b->iov[0] = (struct iovec) { (void *) data, 300 };
  b->niov = 1;
  b->nf = 3;
  for (int i = 0; i < 3; i++)
    b->f[i].len = 100;
  b->len = 300;
  b->sent = sent;
  b->f_done = accounted;
  b->f_end = (size_t) accounted * 100;
  qp->tx.b = b;
}

/* A write that fails after one FPDU and half the next went out comes
 * before the batch is accounted (tx_progress): the rest of the half-sent
 * FPDU is what the peer's deframer still needs, 50 bytes; the FPDU
 * written whole is not.  Before, the length of that rest was taken from
 * the first FPDU not accounted, and came out negative: g_malloc of nearly
 * 2^64 bytes aborted the process (seen in CI: iwarp-netpath, relay-reset). */
static void
test_drop_unaccounted(void)
{
  static iw_dev_t dev;  /* its mr_lock, statically zeroed, needs no init */
  iw_qp_t qp = { .dev = &dev };
  uint8_t data[300];
  for (int i = 0; i < 300; i++)
    data[i] = (uint8_t) i;
  batch_set(&qp, data, 150, 0);
  iw_tx_drop(&qp);
  g_assert_cmpuint(qp.tail_len, ==, 50);
  g_assert_cmpmem(qp.tail, qp.tail_len, data + 150, 50);
  g_assert_cmpuint(qp.tx.b->sent, ==, 0);
  g_assert_cmpint(qp.tx.b->nf, ==, 0);
  iw_tx_free(&qp);
}

/* The same batch accounted up to the half-sent FPDU: the same rest. */
static void
test_drop_accounted(void)
{
  static iw_dev_t dev;
  iw_qp_t qp = { .dev = &dev };
  uint8_t data[300];
  for (int i = 0; i < 300; i++)
    data[i] = (uint8_t) (255 - i);
  batch_set(&qp, data, 150, 1);
  iw_tx_drop(&qp);
  g_assert_cmpuint(qp.tail_len, ==, 50);
  g_assert_cmpmem(qp.tail, qp.tail_len, data + 150, 50);
  iw_tx_free(&qp);
}

/* Written to an FPDU boundary: nothing is owed. */
static void
test_drop_on_boundary(void)
{
  static iw_dev_t dev;
  iw_qp_t qp = { .dev = &dev };
  uint8_t data[300] = { 0 };
  batch_set(&qp, data, 200, 0);
  iw_tx_drop(&qp);
  g_assert_cmpuint(qp.tail_len, ==, 0);
  g_assert_null(qp.tail);
  iw_tx_free(&qp);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/iwarp/tx/drop/unaccounted", test_drop_unaccounted);
  g_test_add_func("/iwarp/tx/drop/accounted", test_drop_accounted);
  g_test_add_func("/iwarp/tx/drop/on-boundary", test_drop_on_boundary);
  return g_test_run();
}
