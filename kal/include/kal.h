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

#include <stdbool.h>
#include <stdint.h>

#include "rnicpi.h"
#include "rnicpi_registry.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup kal Kernel access layer
 *  @{ */

/** Longest interface name, including the terminating NUL. */
#define KAL_IFACE_NAME_MAX 64

/** One interface: a device of a usable provider, or an alias of one that
 *  the configuration file names (itapi.conf(5)). */
typedef struct kal_iface {
  char name[KAL_IFACE_NAME_MAX];   /**< interface name, input to it_ia_create */
  const rnicpi_provider_t *prov;   /**< provider that serves it */
  char device[64];                 /**< device name within the provider */
  rnicpi_transport_t transport;    /**< wire semantics of the device */
  /** For an alias, the name of the device's own interface; "" for a device. */
  char alias_of[KAL_IFACE_NAME_MAX];
  /** `cm` of the configuration file for this interface (its section, else
   *  [itapi]): "auto", "host" or "provider"; NULL when the file sets none.
   *  ITAPI_CM overrides it. */
  const char *cm;
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

/**
 * @brief Why no interface has this name, when the configuration file
 *        explains it: the file is broken (every name then fails), or it
 *        defines the name as an alias of a device no usable provider offers.
 * @param name the name it_ia_create() was given.
 * @return a sentence owned by the kAL, or NULL when the file says nothing
 *         of the name.
 */
const char *kal_iface_missing(const char *name);

/**
 * @brief Number of providers the registry holds, usable and refused, once
 *        the configuration file has selected them (kal_init()).
 *
 * Every reader of the registry goes through these calls, so that none
 * builds it before the file's `provider` key has been applied.
 * @return the count.
 */
size_t kal_provider_count(void);

/**
 * @brief One provider of the registry, usable or refused.
 * @param i index below kal_provider_count().
 * @return the entry, or NULL when @p i is out of range.
 */
const rnicpi_entry_t *kal_provider_get(size_t i);

/**
 * @brief The capability record of the device behind an interface, as the
 *        access layer reads it: the provider's query, completed for its
 *        ABI minor (rnicpi_caps_complete()).
 *
 * Opens the device without upcalls for the query and closes it again.
 * @param iface an interface of kal_iface_get() or kal_iface_find().
 * @param caps filled, only on success.
 * @retval RNICPI_OK @p caps is filled.
 * @retval RNICPI_EINVAL @p iface or @p caps is NULL.
 * @retval other the provider's status from `open` or `query`.
 */
rnicpi_status_t kal_iface_caps(const kal_iface_t *iface, rnicpi_caps_t *caps);

/** @name Configuration file (itapi.conf(5))
 *  @{ */

/** Where the configuration file is read when ITAPI_CONF is not set. */
#define KAL_CONF_DEFAULT_FILE "/etc/itapi.conf"

/** One value of the configuration file. */
typedef struct kal_conf_value {
  char *text;     /**< the value, NULL when the key is not set */
  unsigned line;  /**< the line it is set on, 0 when not set */
} kal_conf_value_t;

/** One `[interface NAME]` section. */
typedef struct kal_conf_iface {
  char *name;                 /**< the interface name it defines */
  unsigned line;              /**< the line of its header */
  /** The device the name opens; not set: the name is a device's own and
   *  the section sets that device's defaults. */
  kal_conf_value_t device;
  kal_conf_value_t provider;  /**< the provider that must serve the device */
  kal_conf_value_t cm;        /**< `auto`, `host` or `provider`, as ITAPI_CM */
} kal_conf_iface_t;

/** A configuration file, parsed. */
typedef struct kal_conf {
  char *origin;               /**< the file, as messages name it */
  kal_conf_value_t provider;  /**< [itapi] provider: names as ITAPI_PROVIDER takes them */
  kal_conf_value_t cm;        /**< [itapi] cm: every interface's default */
  kal_conf_iface_t *ifaces;   /**< the [interface NAME] sections, in file order */
  size_t n_ifaces;            /**< how many */
} kal_conf_t;

/**
 * @brief Parse the text of a configuration file.
 *
 * Lines are `[itapi]`, `[interface NAME]`, `KEY = VALUE` (spaces around
 * the `=` are dropped), blank, or a comment starting with `#`.  [itapi]
 * takes `provider` and `cm`; [interface NAME] takes `device`, `provider`
 * and `cm`.  A key set twice, a section given twice, an unknown key or
 * section, a value out of its set, a key before any section: each is an
 * error naming the line.
 *
 * @param text the file's contents (NULL reads as empty).
 * @param origin what messages call the file, e.g. its path (NULL: "(text)").
 * @param conf set on success to the settings; free with kal_conf_free().
 * @param why set on failure to an allocated sentence "configuration file
 *        ORIGIN, line N: WHAT IS WRONG"; free it with g_free().  May be NULL.
 * @retval RNICPI_OK parsed.
 * @retval RNICPI_EINVAL a line is wrong.
 */
rnicpi_status_t kal_conf_parse(const char *text, const char *origin, kal_conf_t **conf, char **why);

/**
 * @brief Read and parse the configuration file of this process: the one
 *        ITAPI_CONF names (ignored in a setuid process), none when it is set
 *        to the empty string or to /dev/null, else #KAL_CONF_DEFAULT_FILE
 *        when it exists.
 *
 * The file is read with kal_file_read_private(): one another user could
 * rewrite is refused.
 *
 * @param conf set to the settings, or to NULL when there is no file (or on
 *        failure); free with kal_conf_free().
 * @param path set to the file read (allocated; NULL when none).
 * @param why set on failure to an allocated sentence naming the file, the
 *        line and what to do; free it with g_free().  Set to NULL on success.
 * @retval RNICPI_OK read, or no file.
 * @retval RNICPI_EINVAL a line is wrong.
 * @retval RNICPI_EACCES the file or its directory could be rewritten by
 *         another user.
 * @retval RNICPI_ENOENT, RNICPI_EIO the file ITAPI_CONF names does not exist
 *         or cannot be read.
 */
rnicpi_status_t kal_conf_read(kal_conf_t **conf, char **path, char **why);

/**
 * @brief Free a parsed configuration.
 * @param conf the configuration (NULL is ignored).
 */
void kal_conf_free(kal_conf_t *conf);

/**
 * @brief The section of an interface name.
 * @param conf a configuration (NULL: none).
 * @param name an interface name.
 * @return its section, or NULL.
 */
const kal_conf_iface_t *kal_conf_iface(const kal_conf_t *conf, const char *name);

/**
 * @brief Why the configuration file of this process was refused at
 *        start-up (kal_init()): the sentence kal_conf_read() gave.
 * @return the sentence, owned by the kAL, or NULL when the file was taken
 *         (or there is none).
 */
const char *kal_conf_error(void);

/** One setting in force and where its value came from. */
typedef struct kal_setting {
  const char *scope;   /**< "itapi" for the stack, else "interface NAME" */
  const char *key;     /**< "file", "provider", "cm", "device" */
  const char *value;   /**< the value in force */
  const char *origin;  /**< "FILE, line N", "ITAPI_PROVIDER" (a variable), or "default" */
} kal_setting_t;

/**
 * @brief Number of settings in force.
 * @return the count.
 */
size_t kal_setting_count(void);

/**
 * @brief One setting in force: first the file, the providers and the
 *        connection path of the stack, then each key of each [interface]
 *        section, in file order.
 * @param i index below kal_setting_count().
 * @return the setting, or NULL when out of range.
 */
const kal_setting_t *kal_setting_get(size_t i);

/** @} */

/** A reservation of one connection qualifier (port) in a port space. */
typedef struct kal_port kal_port_t;

/**
 * @brief Reserve a port host-wide: no other process or listener of this
 *        host can hold the same port of the same space until it is released
 *        or the holder dies.
 *
 * A port given below rnicpi_unprivileged_port_start() needs CAP_NET_BIND_SERVICE
 * in the effective set, as the kernel requires of a TCP port, whatever the
 * space; a port chosen here (0 in) is never below it.
 *
 * @param space port space: the name of the provider whose connection
 *        qualifiers it holds (each provider has a space of its own).
 * @param port in: the port, or 0 to pick a free one; out: the port.
 * @param res set to the reservation.
 * @param why set on failure to an allocated sentence naming the port, what
 *        refused it (a holder by its pid and uid, as SO_PEERCRED gives
 *        them) and what to do; free it with g_free().  May be NULL.
 * @retval RNICPI_OK reserved.
 * @retval RNICPI_EACCES the port is privileged and this process lacks
 *         CAP_NET_BIND_SERVICE.
 * @retval RNICPI_EEXIST the port is held by another listener.
 * @retval RNICPI_EINVAL the port is out of range (1..65535).
 * @retval RNICPI_ELIMIT no free port was found.
 * @retval RNICPI_ENOMEM, RNICPI_EIO the socket of the reservation failed.
 */
rnicpi_status_t kal_port_reserve(const char *space, uint32_t *port, kal_port_t **res, char **why);

/**
 * @brief Release a reservation.
 * @param res the reservation (NULL is ignored).
 */
void kal_port_release(kal_port_t *res);

/** Pinned memory of one registration. */
typedef struct kal_pin {
  uintptr_t first_page;  /**< address of the first page */
  size_t num_pages;      /**< pages the range spans */
  size_t page_size;      /**< bytes per page */
  uint64_t bytes;        /**< bytes the range spans (num_pages * page_size) */
  bool locked;           /**< the pages are locked and accounted (#KAL_PIN_LOCK) */
} kal_pin_t;

/** How kal_pin() takes a range. */
typedef enum {
  /** Lock the pages in memory (mlock) and account them against the process
   *  limit: for a provider whose device needs pinned memory, one without
   *  #RNICPI_CAP_NO_PIN.  Without it the range is only checked. */
  KAL_PIN_LOCK = 1u << 0,
  /** The registration grants a write right (local write, remote write,
   *  atomics): every page must be mapped writable, as get_user_pages()
   *  with FOLL_WRITE requires. */
  KAL_PIN_WRITE = 1u << 1,
} kal_pin_flags_t;

/**
 * @brief Check that every page of a range is mapped and readable, and
 *        writable when asked (the check kal_pin() makes; for a change of
 *        rights of a registered range).
 * @param addr first byte.
 * @param length bytes (not 0).
 * @param write whether every page must be writable.
 * @param why set on failure to an allocated sentence naming the first page
 *        that fails, its offset in the range and its mapping; free it with
 *        g_free().  May be NULL.
 * @retval RNICPI_OK every page qualifies (or /proc/self/maps cannot be read:
 *         nothing is checked).
 * @retval RNICPI_ERANGE a page of the range is not mapped.
 * @retval RNICPI_EACCES a page is mapped without read permission, or
 *         without write permission when @p write.
 */
rnicpi_status_t kal_mem_check(const void *addr, uint64_t length, bool write, char **why);

/**
 * @brief Check a range for registration (kal_mem_check()) and, with
 *        #KAL_PIN_LOCK, lock its pages and account them against the
 *        process limit.
 *
 * The limit follows the kernel's rule for pinning: ITAPI_MEMLOCK_LIMIT
 * when set (kal_memlock_parse()); else none for a process with
 * CAP_IPC_LOCK in its effective set (kal_cap_ipc_lock()); else the soft
 * RLIMIT_MEMLOCK.
 *
 * @param addr first byte.
 * @param length bytes (not 0).
 * @param flags OR of ::kal_pin_flags_t.
 * @param pin set to the pin record (its page geometry also without
 *        #KAL_PIN_LOCK).
 * @param why set on failure to an allocated sentence naming the numbers and
 *        what to do; free it with g_free().
 * @retval RNICPI_OK checked, and pinned with #KAL_PIN_LOCK.
 * @retval RNICPI_ERANGE a page of the range is not mapped.
 * @retval RNICPI_EACCES a page is not readable, or not writable with
 *         #KAL_PIN_WRITE.
 * @retval RNICPI_EINVAL ITAPI_MEMLOCK_LIMIT is not a size (#KAL_PIN_LOCK only).
 * @retval RNICPI_ELIMIT the limit would be exceeded, or the kernel refused
 *         to lock that much.
 * @retval RNICPI_EIO the OS refused to lock the pages otherwise.
 */
rnicpi_status_t kal_pin(void *addr, uint64_t length, uint32_t flags, kal_pin_t **pin, char **why);

/**
 * @brief Unpin and unaccount a range (pages still pinned by another
 *        registration stay locked); a record made without #KAL_PIN_LOCK is
 *        only freed.
 * @param pin the record (NULL is ignored).
 */
void kal_unpin(kal_pin_t *pin);

/**
 * @brief Bytes pinned by this process now, and the limit in force.
 * @param pinned set to the bytes locked by registrations with #KAL_PIN_LOCK.
 * @param limit set to the limit (UINT64_MAX when unlimited, 0 when
 *        ITAPI_MEMLOCK_LIMIT does not parse).
 */
void kal_pin_usage(uint64_t *pinned, uint64_t *limit);

/**
 * @brief Parse a memory-lock limit as ITAPI_MEMLOCK_LIMIT gives it.
 * @param text a whole number of bytes with an optional unit K, M, G or T
 *        (powers of 1024, either case: `65536`, `64M`, `1g`), or
 *        `unlimited`.
 * @param bytes set on success to the bytes (UINT64_MAX for `unlimited`).
 * @param why set on failure to an allocated sentence naming the variable,
 *        the value and what is accepted; free it with g_free().  May be NULL.
 * @retval RNICPI_OK parsed.
 * @retval RNICPI_EINVAL anything else (empty, a sign, a fraction, an unknown
 *         unit, trailing text, more than 64 bits).
 */
rnicpi_status_t kal_memlock_parse(const char *text, uint64_t *bytes, char **why);

/**
 * @brief Whether this process has CAP_IPC_LOCK in its effective set (the
 *        kernel then lets it lock memory past RLIMIT_MEMLOCK).
 * @return true when it has; false when not, or when capget(2) fails.
 */
bool kal_cap_ipc_lock(void);

/**
 * @brief At start-up (kal_init()): log a message when ITAPI_MEMLOCK_LIMIT
 *        is set to something kal_memlock_parse() refuses, naming the
 *        variable, the value and what is accepted.
 */
void kal_pin_check_env(void);

/**
 * @brief Read a file of host settings that no other user can have written.
 *
 * The file must be a regular file owned by root or by this process's
 * effective user and writable by neither its group nor others, and so
 * must its directory, unless that is sticky (sshd's StrictModes): settings
 * another user could rewrite are refused.  The checks are made on the file
 * opened and read, wherever a link led, so a rename between check and read
 * changes nothing.
 *
 * @param path the file.
 * @param text set on success to its contents; free it with g_free().
 * @param bad set on failure to an allocated phrase; free it with g_free().
 *        With #RNICPI_ENOENT and #RNICPI_EIO it completes "PATH ...":
 *        "cannot be read (No such file or directory)", "is not a regular
 *        file".  With #RNICPI_EACCES it names what is unsafe: "it is
 *        writable by its group (mode 0664, owner uid 1000)", "its directory
 *        /srv is owned by uid 1001 (mode 0755), neither root nor this
 *        process's uid 1000".
 * @param fix set for an unsafe file to the command that mends it
 *        (`chmod go-w PATH`, `chown root PATH`), else to NULL; free it with
 *        g_free().
 * @retval RNICPI_OK read.
 * @retval RNICPI_ENOENT the file does not exist.
 * @retval RNICPI_EIO it cannot be opened or read, or is not a regular file.
 * @retval RNICPI_EACCES it, or its directory, could be rewritten by another
 *         user.
 */
rnicpi_status_t kal_file_read_private(const char *path, char **text, char **bad, char **fix);

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
 * allowed.  A file that cannot be read or parsed refuses every connection,
 * and so does one another user could rewrite: owned by neither root nor
 * this process's user, or writable by its group or others, or in a
 * directory that is (unless sticky).
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
 * @retval RNICPI_EACCES refused by a rule, or by a broken or unsafe policy
 *         file.
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
