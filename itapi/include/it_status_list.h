/**
 * @file it_status_list.h
 * @brief The single list of IT-API 2.1 status codes (X-macro).
 *
 * This file is the one place where the names of the ::it_status_t
 * enumerators and their human-readable messages are written down.
 * `it_api.h` expands the list into the `it_status_t` enumeration; the
 * library expands it again into its name and message tables, so the three
 * can never disagree.
 *
 * The entries are in exactly the order of the IT-API 2.1 header. That order
 * is (almost) alphabetical and new codes were inserted in the middle from
 * one version of the specification to the next, so the numeric value of a
 * status is only an artefact of its position: applications must compare
 * statuses by name, never by number.
 *
 * Usage: define a macro `X(name, message)` and expand `IT_STATUS_LIST(X)`.
 * `name` is the bare enumerator identifier and `message` a string literal
 * (a short sentence fragment, lower case, no final period) that says what
 * the status means to an application.
 *
 * @ingroup status
 */
#ifndef IT_STATUS_LIST_H
#define IT_STATUS_LIST_H

/**
 * @brief Expands `X(name, message)` once per IT-API status, in 2.1 order.
 * @param X macro taking the enumerator name and its message string literal
 * @ingroup status
 */
#define IT_STATUS_LIST(X) \
    /** the operation succeeded */ \
    X(IT_SUCCESS, "the operation succeeded") \
    /** the operation was aborted before it completed */ \
    X(IT_ERR_ABORT, "the operation was aborted before it completed") \
    /** the access rights of the object or memory do not allow the operation */ \
    X(IT_ERR_ACCESS, "the access rights of the object or memory do not allow the operation") \
    /** the network address cannot be used or reached */ \
    X(IT_ERR_ADDRESS, "the network address cannot be used or reached") \
    /** an aggregate event dispatcher is not allowed in this place */ \
    X(IT_ERR_AEVD_NOT_ALLOWED, "an aggregate event dispatcher is not allowed in this place") \
    /** the interface adapter already has an affiliated asynchronous event dispatcher */ \
    X(IT_ERR_ASYNC_AFF_EVD_EXISTS, "the interface adapter already has an affiliated asynchronous event dispatcher") \
    /** the interface adapter already has an unaffiliated asynchronous event dispatcher */ \
    X(IT_ERR_ASYNC_UNAFF_EVD_EXISTS, "the interface adapter already has an unaffiliated asynchronous event dispatcher") \
    /** a callback is already attached to the event dispatcher */ \
    X(IT_ERR_CALLBACK_EXISTS, "a callback is already attached to the event dispatcher") \
    /** the endpoint cannot be reset in its current state */ \
    X(IT_ERR_CANNOT_RESET, "the endpoint cannot be reset in its current state") \
    /** the connection qualifier is already in use */ \
    X(IT_ERR_CONN_QUAL_BUSY, "the connection qualifier is already in use") \
    /** the endpoint is still in use and cannot be freed or changed */ \
    X(IT_ERR_EP_BUSY, "the endpoint is still in use and cannot be freed or changed") \
    /** the previous connection of the endpoint is still in time-wait */ \
    X(IT_ERR_EP_TIMEWAIT, "the previous connection of the endpoint is still in time-wait") \
    /** the event dispatcher is still in use by another object */ \
    X(IT_ERR_EVD_BUSY, "the event dispatcher is still in use by another object") \
    /** waiting is not allowed on this event dispatcher */ \
    X(IT_ERR_EVD_WAIT, "waiting is not allowed on this event dispatcher") \
    /** the queue of the event dispatcher is full */ \
    X(IT_ERR_EVD_QUEUE_FULL, "the queue of the event dispatcher is full") \
    /** a pointer argument refers to memory that cannot be accessed */ \
    X(IT_ERR_FAULT, "a pointer argument refers to memory that cannot be accessed") \
    /** the endpoint has reached its hard high watermark of outstanding receives */ \
    X(IT_ERR_HARD_HI_WATERMARK, "the endpoint has reached its hard high watermark of outstanding receives") \
    /** the interface adapter suffered a catastrophic error and is no longer usable */ \
    X(IT_ERR_IA_CATASTROPHE, "the interface adapter suffered a catastrophic error and is no longer usable") \
    /** the wait was interrupted before an event arrived */ \
    X(IT_ERR_INTERRUPT, "the wait was interrupted before an event arrived") \
    /** the addressing mode is invalid or not supported */ \
    X(IT_ERR_INVALID_ADDR_MODE, "the addressing mode is invalid or not supported") \
    /** the memory address is invalid */ \
    X(IT_ERR_INVALID_ADDRESS, "the memory address is invalid") \
    /** the aggregate event dispatcher handle is not valid for this use */ \
    X(IT_ERR_INVALID_AEVD, "the aggregate event dispatcher handle is not valid for this use") \
    /** the address handle is not valid */ \
    X(IT_ERR_INVALID_AH, "the address handle is not valid") \
    /** the local acknowledgement timeout is out of range */ \
    X(IT_ERR_INVALID_ATIMEOUT, "the local acknowledgement timeout is out of range") \
    /** the atomic operation code is invalid */ \
    X(IT_ERR_INVALID_ATOMIC_OP, "the atomic operation code is invalid") \
    /** the connection manager retry count is out of range */ \
    X(IT_ERR_INVALID_CM_RETRY, "the connection manager retry count is out of range") \
    /** the connection establishment flags are invalid */ \
    X(IT_ERR_INVALID_CN_EST_FLAGS, "the connection establishment flags are invalid") \
    /** the connection establishment identifier is unknown or no longer pending */ \
    X(IT_ERR_INVALID_CN_EST_ID, "the connection establishment identifier is unknown or no longer pending") \
    /** the connection event dispatcher is not valid or serves the wrong event stream */ \
    X(IT_ERR_INVALID_CONN_EVD, "the connection event dispatcher is not valid or serves the wrong event stream") \
    /** the connection qualifier is invalid or of an unsupported type */ \
    X(IT_ERR_INVALID_CONN_QUAL, "the connection qualifier is invalid or of an unsupported type") \
    /** the requested conversion cannot be performed */ \
    X(IT_ERR_INVALID_CONVERSION, "the requested conversion cannot be performed") \
    /** the data transfer flags are invalid for this operation */ \
    X(IT_ERR_INVALID_DTO_FLAGS, "the data transfer flags are invalid for this operation") \
    /** the endpoint handle is not valid */ \
    X(IT_ERR_INVALID_EP, "the endpoint handle is not valid") \
    /** the endpoint attributes are invalid */ \
    X(IT_ERR_INVALID_EP_ATTR, "the endpoint attributes are invalid") \
    /** the endpoint key is invalid */ \
    X(IT_ERR_INVALID_EP_KEY, "the endpoint key is invalid") \
    /** the endpoint is not in a state that allows this operation */ \
    X(IT_ERR_INVALID_EP_STATE, "the endpoint is not in a state that allows this operation") \
    /** the endpoint has the wrong service type for this operation */ \
    X(IT_ERR_INVALID_EP_TYPE, "the endpoint has the wrong service type for this operation") \
    /** the event dispatcher handle is not valid */ \
    X(IT_ERR_INVALID_EVD, "the event dispatcher handle is not valid") \
    /** the event dispatcher is not in a state that allows this operation */ \
    X(IT_ERR_INVALID_EVD_STATE, "the event dispatcher is not in a state that allows this operation") \
    /** the event stream of the event dispatcher is invalid for this use */ \
    X(IT_ERR_INVALID_EVD_TYPE, "the event stream of the event dispatcher is invalid for this use") \
    /** the flags argument is invalid */ \
    X(IT_ERR_INVALID_FLAGS, "the flags argument is invalid") \
    /** the handle is not a live handle of the expected type (freed, foreign or garbage) */ \
    X(IT_ERR_INVALID_HANDLE, "the handle is not a live handle of the expected type (freed, foreign or garbage)") \
    /** the interface adapter handle is not valid */ \
    X(IT_ERR_INVALID_IA, "the interface adapter handle is not valid") \
    /** the I/O buffer list is invalid */ \
    X(IT_ERR_INVALID_IOBL, "the I/O buffer list is invalid") \
    /** the length is invalid */ \
    X(IT_ERR_INVALID_LENGTH, "the length is invalid") \
    /** the listen handle is not valid */ \
    X(IT_ERR_INVALID_LISTEN, "the listen handle is not valid") \
    /** the local memory region handle is not valid */ \
    X(IT_ERR_INVALID_LMR, "the local memory region handle is not valid") \
    /** the local connection manager timeout is out of range */ \
    X(IT_ERR_INVALID_LTIMEOUT, "the local connection manager timeout is out of range") \
    /** the requested major API version is not supported */ \
    X(IT_ERR_INVALID_MAJOR_VERSION, "the requested major API version is not supported") \
    /** the parameter mask is invalid */ \
    X(IT_ERR_INVALID_MASK, "the parameter mask is invalid") \
    /** the requested minor API version is not supported */ \
    X(IT_ERR_INVALID_MINOR_VERSION, "the requested minor API version is not supported") \
    /** no interface adapter has this name */ \
    X(IT_ERR_INVALID_NAME, "no interface adapter has this name") \
    /** the network address is invalid */ \
    X(IT_ERR_INVALID_NETADDR, "the network address is invalid") \
    /** the number of segments is invalid or too large */ \
    X(IT_ERR_INVALID_NUM_SEGMENTS, "the number of segments is invalid or too large") \
    /** the private data length exceeds what the operation allows */ \
    X(IT_ERR_INVALID_PDATA_LENGTH, "the private data length exceeds what the operation allows") \
    /** the memory privileges are invalid */ \
    X(IT_ERR_INVALID_PRIVS, "the memory privileges are invalid") \
    /** the protection zone handle is not valid */ \
    X(IT_ERR_INVALID_PZ, "the protection zone handle is not valid") \
    /** the queue size is invalid */ \
    X(IT_ERR_INVALID_QUEUE_SIZE, "the queue size is invalid") \
    /** the number of receive data transfers is invalid */ \
    X(IT_ERR_INVALID_RECV_DTO, "the number of receive data transfers is invalid") \
    /** the receive event dispatcher is not valid or serves the wrong event stream */ \
    X(IT_ERR_INVALID_RECV_EVD, "the receive event dispatcher is not valid or serves the wrong event stream") \
    /** the receive event dispatcher is not in a usable state */ \
    X(IT_ERR_INVALID_RECV_EVD_STATE, "the receive event dispatcher is not in a usable state") \
    /** the request event dispatcher is not valid or serves the wrong event stream */ \
    X(IT_ERR_INVALID_REQ_EVD, "the request event dispatcher is not valid or serves the wrong event stream") \
    /** the request event dispatcher is not in a usable state */ \
    X(IT_ERR_INVALID_REQ_EVD_STATE, "the request event dispatcher is not in a usable state") \
    /** the transport retry count is out of range */ \
    X(IT_ERR_INVALID_RETRY, "the transport retry count is out of range") \
    /** the remote memory region handle is not valid */ \
    X(IT_ERR_INVALID_RMR, "the remote memory region handle is not valid") \
    /** the receiver-not-ready retry count is out of range */ \
    X(IT_ERR_INVALID_RNR_RETRY, "the receiver-not-ready retry count is out of range") \
    /** the remote memory region type is invalid or not supported */ \
    X(IT_ERR_INVALID_RMR_TYPE, "the remote memory region type is invalid or not supported") \
    /** the remote connection manager timeout is out of range */ \
    X(IT_ERR_INVALID_RTIMEOUT, "the remote connection manager timeout is out of range") \
    /** the event dispatcher does not serve the software event stream */ \
    X(IT_ERR_INVALID_SOFT_EVD, "the event dispatcher does not serve the software event stream") \
    /** the path is invalid or cannot be used from this spigot */ \
    X(IT_ERR_INVALID_SOURCE_PATH, "the path is invalid or cannot be used from this spigot") \
    /** the spigot identifier is invalid */ \
    X(IT_ERR_INVALID_SPIGOT, "the spigot identifier is invalid") \
    /** the shared receive queue handle is not valid */ \
    X(IT_ERR_INVALID_SRQ, "the shared receive queue handle is not valid") \
    /** the shared receive queue size is invalid */ \
    X(IT_ERR_INVALID_SRQ_SIZE, "the shared receive queue size is invalid") \
    /** the event threshold is invalid */ \
    X(IT_ERR_INVALID_THRESHOLD, "the event threshold is invalid") \
    /** the datagram service reply status is invalid */ \
    X(IT_ERR_INVALID_UD_STATUS, "the datagram service reply status is invalid") \
    /** the datagram service request handle is not valid */ \
    X(IT_ERR_INVALID_UD_SVC, "the datagram service request handle is not valid") \
    /** the datagram service request identifier is unknown */ \
    X(IT_ERR_INVALID_UD_SVC_REQ_ID, "the datagram service request identifier is unknown") \
    /** the watermark value is invalid */ \
    X(IT_ERR_INVALID_WATERMARK, "the watermark value is invalid") \
    /** the local memory region is still in use */ \
    X(IT_ERR_LMR_BUSY, "the local memory region is still in use") \
    /** the file descriptor does not belong to the event dispatcher */ \
    X(IT_ERR_MISMATCH_FD, "the file descriptor does not belong to the event dispatcher") \
    /** no consumer context is set on the handle */ \
    X(IT_ERR_NO_CONTEXT, "no consumer context is set on the handle") \
    /** the caller lacks the permission for this operation */ \
    X(IT_ERR_NO_PERMISSION, "the caller lacks the permission for this operation") \
    /** the operation is not supported by this interface adapter */ \
    X(IT_ERR_OP_NOT_SUPPORTED, "the operation is not supported by this interface adapter") \
    /** the data exceeds the maximum payload size */ \
    X(IT_ERR_PAYLOAD_SIZE, "the data exceeds the maximum payload size") \
    /** private data is not supported for this operation */ \
    X(IT_ERR_PDATA_NOT_SUPPORTED, "private data is not supported for this operation") \
    /** privileged operations are not enabled or not permitted */ \
    X(IT_ERR_PRIV_OPS_UNAVAILABLE, "privileged operations are not enabled or not permitted") \
    /** the protection zone is still in use by other objects */ \
    X(IT_ERR_PZ_BUSY, "the protection zone is still in use by other objects") \
    /** no event is queued */ \
    X(IT_ERR_QUEUE_EMPTY, "no event is queued") \
    /** the address range lies outside the memory region */ \
    X(IT_ERR_RANGE, "the address range lies outside the memory region") \
    /** not enough memory or adapter resources to complete the operation */ \
    X(IT_ERR_RESOURCES, "not enough memory or adapter resources to complete the operation") \
    /** the requested inbound RDMA Read depth exceeds what the adapter provides */ \
    X(IT_ERR_RESOURCE_IRD, "the requested inbound RDMA Read depth exceeds what the adapter provides") \
    /** the memory region is longer than the adapter can register */ \
    X(IT_ERR_RESOURCE_LMR_LENGTH, "the memory region is longer than the adapter can register") \
    /** the requested outbound RDMA Read depth exceeds what the adapter provides */ \
    X(IT_ERR_RESOURCE_ORD, "the requested outbound RDMA Read depth exceeds what the adapter provides") \
    /** the requested queue size exceeds what the adapter provides */ \
    X(IT_ERR_RESOURCE_QUEUE_SIZE, "the requested queue size exceeds what the adapter provides") \
    /** the requested number of outstanding receives exceeds what the adapter provides */ \
    X(IT_ERR_RESOURCE_RECV_DTO, "the requested number of outstanding receives exceeds what the adapter provides") \
    /** the requested number of outstanding requests exceeds what the adapter provides */ \
    X(IT_ERR_RESOURCE_REQ_DTO, "the requested number of outstanding requests exceeds what the adapter provides") \
    /** the requested number of RDMA Read segments exceeds what the adapter provides */ \
    X(IT_ERR_RESOURCE_RRSEG, "the requested number of RDMA Read segments exceeds what the adapter provides") \
    /** the requested number of receive segments exceeds what the adapter provides */ \
    X(IT_ERR_RESOURCE_RSEG, "the requested number of receive segments exceeds what the adapter provides") \
    /** the requested number of RDMA Write segments exceeds what the adapter provides */ \
    X(IT_ERR_RESOURCE_RWSEG, "the requested number of RDMA Write segments exceeds what the adapter provides") \
    /** the requested number of send segments exceeds what the adapter provides */ \
    X(IT_ERR_RESOURCE_SSEG, "the requested number of send segments exceeds what the adapter provides") \
    /** the endpoint has passed its soft high watermark of outstanding receives */ \
    X(IT_ERR_SOFT_HI_WATERMARK, "the endpoint has passed its soft high watermark of outstanding receives") \
    /** the shared receive queue is still in use by endpoints */ \
    X(IT_ERR_SRQ_BUSY, "the shared receive queue is still in use by endpoints") \
    /** the low watermark of the shared receive queue cannot be set to this value */ \
    X(IT_ERR_SRQ_LOW_WATERMARK, "the low watermark of the shared receive queue cannot be set to this value") \
    /** shared receive queues are not supported by this interface adapter */ \
    X(IT_ERR_SRQ_NOT_SUPPORTED, "shared receive queues are not supported by this interface adapter") \
    /** the timeout expired before the operation completed */ \
    X(IT_ERR_TIMEOUT_EXPIRED, "the timeout expired before the operation completed") \
    /** the work queue is full: too many operations are outstanding */ \
    X(IT_ERR_TOO_MANY_POSTS, "the work queue is full: too many operations are outstanding") \
    /** too many threads are already waiting on the event dispatcher */ \
    X(IT_ERR_WAITER_LIMIT, "too many threads are already waiting on the event dispatcher")

#endif /* IT_STATUS_LIST_H */
