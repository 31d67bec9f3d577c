#ifndef C_COURIER_NETLINK_H
#define C_COURIER_NETLINK_H

// Routing netlink for Courier's reachability monitor (Linux only). Glibc's Swift overlay exports
// none of the netlink types, and the NLMSG_*/RTA_* walkers are macros Swift cannot call, so the
// socket work and the message walk live here, behind a few plain functions.

#include <stddef.h>
#include <stdint.h>

/// What `courier_nl_next` found.
enum courier_nl_kind {
    COURIER_NL_END = 0,      ///< No further message in the buffer.
    COURIER_NL_LINK = 1,     ///< A link (RTM_NEWLINK): `index`, `flags`, `arphrd`, `name`.
    COURIER_NL_ROUTE = 2,    ///< A route (RTM_NEWROUTE): the route fields.
    COURIER_NL_DONE = 3,     ///< NLMSG_DONE: a dump is complete; `error` is its result (-EINTR: interrupted by a change).
    COURIER_NL_ERROR = 4,    ///< NLMSG_ERROR: `error` holds the (negative) errno, 0 for an ack.
    COURIER_NL_OTHER = 5,    ///< Any other message (address changes, deletions): a change happened.
};

/// One message, flattened.
struct courier_nl_item {
    int kind;
    int error;
    /// The message's sequence number (a dump's replies carry the request's).
    unsigned int seq;
    /// Links: the interface index, IFF_* flags, ARPHRD_* type and name.
    int index;
    unsigned int flags;
    unsigned int arphrd;
    char name[16];
    /// Routes: family (AF_INET/AF_INET6), table, RTN_* type, prefix length, destination bytes
    /// (network order, zero when absent), output interface (0 when absent), metric.
    int family;
    unsigned int table;
    unsigned int type;
    unsigned int dst_len;
    uint8_t dst[16];
    int oif;
    unsigned int priority;
};

/// Opens a NETLINK_ROUTE socket, close-on-exec. With `subscribe` non-zero it joins the link,
/// IPv4/IPv6 address and IPv4/IPv6 route groups and is non-blocking. Returns the descriptor, or
/// -errno.
int courier_nl_open(int subscribe);

/// Sends a dump request: RTM_GETLINK (`links` non-zero) or RTM_GETROUTE for all families.
/// Returns 0 or -errno.
int courier_nl_request_dump(int fd, int links, unsigned int seq);

/// Reads the message at `*offset` of `buffer` into `item` and moves `*offset` past it.
/// Returns `item->kind`; COURIER_NL_END when no complete message is left.
int courier_nl_next(const void *buffer, size_t length, size_t *offset, struct courier_nl_item *item);

/// Moves the calling thread into the network namespace at `path` (`/var/run/netns/NAME`).
/// Returns 0 or -errno.
int courier_enter_netns(const char *path);

/// Makes a close-on-exec pipe in `ends` (read end, write end). Returns 0 or -errno.
int courier_wake_pipe(int ends[2]);

/// The inode number of the file (or socket) `fd` refers to, 0 when it cannot be read.
unsigned long long courier_inode(int fd);

/// The calling thread's kernel thread id.
int courier_gettid(void);

#endif
