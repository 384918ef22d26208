/*
 * The kernel access layer (kAL): services that must be OS-wide.
 *
 * SPDX-License-Identifier: MIT
 */

/**
 * @file kal.h
 * @brief kAL client API: interface registry, connection-qualifier space,
 *        pinned-memory accounting, host connection policy.
 *
 * The kAL runs embedded in the process by default; the same calls will be
 * served by the itad daemon for a host-wide view.  Its statuses are
 * RNIC-PI statuses.  The data path never goes through the kAL.
 */
#ifndef KAL_H
#define KAL_H

#include <stdint.h>

#include "rnicpi.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup kal Kernel access layer
 *  @{ */

/** Longest interface name, including the terminating NUL. */
#define KAL_IFACE_NAME_MAX 64

/** One interface: a device of a usable provider. */
typedef struct kal_iface {
  char name[KAL_IFACE_NAME_MAX];   /**< interface name, input to it_ia_create */
  const rnicpi_provider_t *prov;   /**< provider that serves it */
  char device[64];                 /**< device name within the provider */
  rnicpi_transport_t transport;    /**< wire semantics of the device */
} kal_iface_t;

/**
 * @brief Start the embedded kAL once: load providers, list interfaces.
 */
void kal_init(void);

/**
 * @brief Number of interfaces.
 * @return the count.
 */
size_t kal_iface_count(void);

/**
 * @brief One interface.
 * @param i index below kal_iface_count().
 * @return the interface, or NULL when out of range.
 */
const kal_iface_t *kal_iface_get(size_t i);

/**
 * @brief Find an interface by name.
 * @param name interface name.
 * @return the interface, or NULL.
 */
const kal_iface_t *kal_iface_find(const char *name);

/** A reservation of one connection qualifier (port) in a port space. */
typedef struct kal_port kal_port_t;

/**
 * @brief Reserve a port host-wide: no other process or listener of this
 *        host can hold the same port of the same space until it is released
 *        or the holder dies.
 * @param space port space, e.g. "emul".
 * @param port in: the port, or 0 to pick a free one; out: the port.
 * @param res set to the reservation.
 * @retval RNICPI_OK reserved.
 * @retval RNICPI_EEXIST the port is held by another listener.
 * @retval RNICPI_EINVAL the port is out of range (1..65535).
 * @retval RNICPI_ELIMIT no free port was found.
 */
rnicpi_status_t kal_port_reserve(const char *space, uint32_t *port, kal_port_t **res);

/**
 * @brief Release a reservation.
 * @param res the reservation (NULL is ignored).
 */
void kal_port_release(kal_port_t *res);

/** Pinned memory of one registration. */
typedef struct kal_pin {
  uintptr_t first_page;  /**< address of the first page */
  size_t num_pages;      /**< pages pinned */
  size_t page_size;      /**< bytes per page */
  uint64_t bytes;        /**< bytes accounted (num_pages * page_size) */
} kal_pin_t;

/**
 * @brief Pin a range and account it against the process limit (the soft
 *        RLIMIT_MEMLOCK, or ITAPI_MEMLOCK_LIMIT bytes when lower).
 * @param addr first byte.
 * @param length bytes (not 0).
 * @param pin set to the pin record.
 * @param why set on failure to an allocated sentence naming both numbers and
 *        what to do; free it with g_free().
 * @retval RNICPI_OK pinned.
 * @retval RNICPI_ELIMIT the limit would be exceeded.
 * @retval RNICPI_EIO the OS refused to lock the pages.
 */
rnicpi_status_t kal_pin(void *addr, uint64_t length, kal_pin_t **pin, char **why);

/**
 * @brief Unpin and unaccount a range (pages still pinned by another
 *        registration stay locked).
 * @param pin the record (NULL is ignored).
 */
void kal_unpin(kal_pin_t *pin);

/**
 * @brief Bytes pinned by this process now, and the limit in force.
 * @param pinned set to the bytes pinned.
 * @param limit set to the limit (UINT64_MAX when unlimited).
 */
void kal_pin_usage(uint64_t *pinned, uint64_t *limit);

/** Which connections a host policy rule governs. */
typedef enum {
  KAL_POLICY_CONNECT = 1, /**< connections this host's consumers open */
  KAL_POLICY_ACCEPT = 2,  /**< requests that reach this host's listeners */
} kal_policy_dir_t;

/**
 * @brief Check a connection against the host policy.
 *
 * The rules are read at the first check from the file ITAPI_POLICY names
 * (ignored in a setuid process), else from /etc/itapi/policy when it
 * exists; with neither, everything is allowed.  Each line is
 * `allow|deny connect|accept|any ADDRESS[/PREFIX]|any [port N[-M]]`; the
 * first rule that matches decides, and a connection no rule matches is
 * allowed.  A file that cannot be read or parsed refuses every connection.
 * An IPv4-mapped IPv6 peer is matched against the IPv4 rules.
 *
 * @param dir #KAL_POLICY_CONNECT for a connection this host opens,
 *        #KAL_POLICY_ACCEPT for a request reaching one of its listeners.
 * @param peer the remote address (AF_INET or AF_INET6).
 * @param port the remote port when connecting, the listener's port when
 *        accepting.
 * @param why set when refused to an allocated sentence naming the rule (file
 *        and line), the peer and the port; free it with g_free().  May be NULL.
 * @retval RNICPI_OK allowed.
 * @retval RNICPI_EACCES refused by a rule, or by a broken policy file.
 * @retval RNICPI_EINVAL @p peer is not an IP address.
 */
rnicpi_status_t kal_policy_check(kal_policy_dir_t dir, const struct sockaddr *peer, uint32_t port,
                                 char **why);

/**
 * @brief Replace the host policy of this process with rules given as text
 *        (the file format of kal_policy_check()); tools and tests use it.
 * @param text the rules, or NULL for none (everything allowed).
 * @param origin what to call them in messages, e.g. a file name (NULL: "(text)").
 * @param why set on failure to an allocated sentence naming the line and
 *        the problem; free it with g_free().  May be NULL.
 * @retval RNICPI_OK loaded.
 * @retval RNICPI_EINVAL a line is not a rule; every connection is then
 *         refused until a good policy is loaded.
 */
rnicpi_status_t kal_policy_load(const char *text, const char *origin, char **why);

/** @} */

#ifdef __cplusplus
}
#endif

#endif /* KAL_H */
