/*
 * RNIC-PI provider registry: built-in providers and loadable modules.
 *
 * SPDX-License-Identifier: MIT
 */

/**
 * @file rnicpi_registry.h
 * @brief The registry of providers the access layers and tools see.
 *
 * Providers are registered in this order, and the first one of a name wins:
 * the modules in the directories or files listed in `ITAPI_PROVIDER_PATH`
 * (colon separated; ignored in setuid programs), so a module there replaces
 * a built-in of the same name; then the built-in providers; then the
 * modules of the install directory.
 * `ITAPI_PROVIDER` (comma separated names) restricts which providers are
 * used; when it is not set, the selection rnicpi_registry_select() gave
 * (the `provider` key of itapi.conf(5)) does.  A provider that is refused (ABI mismatch, missing symbol, probe
 * failure) stays in the registry with the reason, and the reason is logged
 * once as a message.
 *
 * Installed for tools that drive providers through RNIC-PI directly
 * (itapi-certify); its functions are libitapi's version node
 * ITAPI_PROVIDER_0.1.  Consumers of IT-API read the same registry through
 * itx_provider_count() and itx_provider_get() (itx.h).
 */
#ifndef RNICPI_REGISTRY_H
#define RNICPI_REGISTRY_H

#include "rnicpi.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @addtogroup rnicpi_abi
 *  @{ */

#pragma GCC visibility push(default)

/** Bytes of rnicpi_entry_t::name: a provider name and its NUL. */
#define RNICPI_PROVIDER_NAME_MAX 64
/** Bytes of rnicpi_entry_t::origin: "built-in" or a module's path, and
 *  its NUL. */
#define RNICPI_ORIGIN_MAX 512

/** One provider the registry knows, usable or refused. */
typedef struct rnicpi_entry {
  char name[RNICPI_PROVIDER_NAME_MAX]; /**< provider name (file name when refused early) */
  char origin[RNICPI_ORIGIN_MAX];      /**< "built-in" or the module's path */
  /** Descriptor with complete operations tables (NULL when refused). */
  const rnicpi_provider_t *prov;
  bool refused;                        /**< true when the provider cannot be used */
  char reason[RNICPI_REASON_MAX];      /**< why it was refused */
} rnicpi_entry_t;

/**
 * @brief Build the registry once (later calls do nothing).
 */
void rnicpi_registry_load(void);

/**
 * @brief Set the providers to use when `ITAPI_PROVIDER` is not set (the
 *        stack's configuration file, itapi.conf(5), chooses them this way).
 *
 * Takes effect only before the registry is built; a later call does
 * nothing.  `ITAPI_PROVIDER`, when set and not empty, overrides it.
 * @param names comma separated provider names, as `ITAPI_PROVIDER` takes
 *        them; NULL or "" for every provider.
 * @param origin where the names come from, for the reason given to a
 *        provider left out ("/etc/itapi.conf, line 3" gives "not selected by
 *        /etc/itapi.conf, line 3 (provider = NAMES)", with @p names).
 */
void rnicpi_registry_select(const char *names, const char *origin);

/**
 * @brief Number of entries, usable and refused.
 * @return the count.
 */
size_t rnicpi_registry_count(void);

/**
 * @brief One entry.
 * @param i index below rnicpi_registry_count().
 * @return the entry, or NULL when @p i is out of range.
 */
const rnicpi_entry_t *rnicpi_registry_get(size_t i);

/**
 * @brief Load one more provider module by path (certification of an
 *        out-of-tree provider).
 * @param path module file.
 * @param entry set to the new entry (usable or refused).
 * @retval RNICPI_OK the module was loaded and is usable.
 * @retval RNICPI_ENOENT the module could not be loaded; see the entry's reason.
 * @retval RNICPI_EINVAL the module is not a usable provider; see the reason.
 */
rnicpi_status_t rnicpi_registry_add_module(const char *path,
                                           const rnicpi_entry_t **entry);

/**
 * @brief Read a device's capability record in the terms of this minor:
 *        the rules a provider older than the bit that names them followed
 *        by its transport, as bits.
 *
 * Call it on the record a provider's query filled, before reading its
 * features; the access layer then branches on bits alone.  Today: a
 * provider older than 1.12 has #RNICPI_CAP_MW_NEEDS_VA_REGION on its
 * iWARP devices (the rule ::rnicpi_bind_t stated for iWARP until 1.11).
 * A record of a provider of this minor is left as it is.
 * @param prov the provider whose query filled @p caps (its abi_minor is read).
 * @param caps the record, changed in place.
 */
void rnicpi_caps_complete(const rnicpi_provider_t *prov, rnicpi_caps_t *caps);

#pragma GCC visibility pop

/** @} */

#ifdef __cplusplus
}
#endif

#endif /* RNICPI_REGISTRY_H */
