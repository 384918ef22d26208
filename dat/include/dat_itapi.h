/**
 * @file dat_itapi.h
 * @brief libdaplitapi: the entry points libdat2 calls in the DAT 2.0 provider over IT-API.
 *
 * libdat2 (Debian's libdapl2) reads `/etc/dat.conf`, or the file named by the
 * environment variable `DAT_OVERRIDE`, and loads the library a line names when
 * a consumer opens that line's IA name.  A line for this provider reads, in
 * DAPL's format:
 *
 *     itapi-IFACE u2.0 nonthreadsafe default /usr/lib/x86_64-linux-gnu/itapi/dat/libdaplitapi.so dapl.2.0 "IFACE 0" ""
 *
 * where IFACE is an IT-API interface as `itapi-info` lists them: the first
 * word of the quoted ia_params is the interface the IA opens; without it
 * the IA name is used.
 * The build tree holds such a file, `build/dat/dat.conf`, with one line per
 * built-in interface (doc/dat.md).
 *
 * @defgroup dat DAT provider
 * @{
 */
#ifndef DAT_ITAPI_H
#define DAT_ITAPI_H

#include <dat2/udat.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Registers one DAT provider with libdat2 for one dat.conf line.
 *
 * libdat2 calls it when it loads the library for a line, and again for
 * each later line naming it.  The provider registered dispatches every
 * handle made through it; the calls it does not offer yet return
 * `DAT_NOT_IMPLEMENTED`.  A second call for the same IA name (libdat2
 * finalizes a provider when its last IA closes, and initializes it again at
 * the next open) registers the same provider again.
 *
 * @param info the line's IA name, DAT version and thread safety
 * @param instance_data the line's ia_params: the IT-API interface name
 *        first (e.g. "IFACE 0"); NULL or empty to use the IA name
 */
void dat_provider_init(const DAT_PROVIDER_INFO *info, const char *instance_data);

/**
 * @brief Unregisters the provider of one dat.conf line from libdat2.
 *
 * The provider's memory is kept: a handle made through it, even a freed
 * one, still names it, and libdat2 reads that name before the provider can
 * refuse the handle.
 *
 * @param info the line's IA name, as given to dat_provider_init()
 */
void dat_provider_fini(const DAT_PROVIDER_INFO *info);

#ifdef __cplusplus
}
#endif

/** @} */
#endif /* DAT_ITAPI_H */
