#if defined(__linux__)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
// net/if.h before the linux/* headers, else the IFF_* values are defined twice.
#include <net/if.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include "CCourierNetlink.h"

int courier_nl_open(int subscribe) {
    int type = SOCK_RAW | SOCK_CLOEXEC | (subscribe ? SOCK_NONBLOCK : 0);
    int fd = socket(AF_NETLINK, type, NETLINK_ROUTE);
    if (fd < 0) return -errno;
    struct sockaddr_nl address;
    memset(&address, 0, sizeof(address));
    address.nl_family = AF_NETLINK;
    if (subscribe) {
        address.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR
                          | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE;
    }
    if (bind(fd, (struct sockaddr *)&address, sizeof(address)) < 0) {
        int error = errno;
        close(fd);
        return -error;
    }
    return fd;
}

int courier_nl_request_dump(int fd, int links, unsigned int seq) {
    struct {
        struct nlmsghdr header;
        union {
            struct ifinfomsg link;
            struct rtmsg route;
        } body;
    } request;
    memset(&request, 0, sizeof(request));
    request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    request.header.nlmsg_seq = seq;
    if (links) {
        request.header.nlmsg_type = RTM_GETLINK;
        request.header.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
        request.body.link.ifi_family = AF_UNSPEC;
    } else {
        request.header.nlmsg_type = RTM_GETROUTE;
        request.header.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
        request.body.route.rtm_family = AF_UNSPEC;
    }
    struct sockaddr_nl kernel;
    memset(&kernel, 0, sizeof(kernel));
    kernel.nl_family = AF_NETLINK;
    ssize_t sent;
    do {
        sent = sendto(fd, &request, request.header.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel));
    } while (sent < 0 && errno == EINTR);
    return sent < 0 ? -errno : 0;
}

static void read_link(const struct nlmsghdr *header, struct courier_nl_item *item) {
    const struct ifinfomsg *info = NLMSG_DATA(header);
    item->index = info->ifi_index;
    item->flags = info->ifi_flags;
    item->arphrd = info->ifi_type;
    int length = (int)IFLA_PAYLOAD(header);
    for (const struct rtattr *a = IFLA_RTA(info); RTA_OK(a, length); a = RTA_NEXT(a, length)) {
        if (a->rta_type == IFLA_IFNAME) {
            size_t n = RTA_PAYLOAD(a);
            if (n > sizeof(item->name) - 1) n = sizeof(item->name) - 1;
            memcpy(item->name, RTA_DATA(a), n);
            item->name[n] = 0;
        }
    }
}

// The interface of a multipath route's first next hop the kernel has not marked dead (its link
// is down) or link-down (no carrier); the first hop's when every hop is so marked.
static int first_live_hop(const struct rtattr *multipath) {
    const struct rtnexthop *hop = RTA_DATA(multipath);
    int left = (int)RTA_PAYLOAD(multipath);
    int first = 0;
    while (left >= (int)sizeof(struct rtnexthop) && RTNH_OK(hop, left)) {
        if (first == 0) first = hop->rtnh_ifindex;
        if (!(hop->rtnh_flags & (RTNH_F_DEAD | RTNH_F_LINKDOWN))) return hop->rtnh_ifindex;
        left -= RTNH_ALIGN(hop->rtnh_len);
        hop = RTNH_NEXT(hop);
    }
    return first;
}

static void read_route(const struct nlmsghdr *header, struct courier_nl_item *item) {
    const struct rtmsg *route = NLMSG_DATA(header);
    item->family = route->rtm_family;
    item->table = route->rtm_table;
    item->type = route->rtm_type;
    item->dst_len = route->rtm_dst_len;
    int length = (int)RTM_PAYLOAD(header);
    for (const struct rtattr *a = RTM_RTA(route); RTA_OK(a, length); a = RTA_NEXT(a, length)) {
        switch (a->rta_type) {
        case RTA_TABLE:
            if (RTA_PAYLOAD(a) >= 4) item->table = *(const uint32_t *)RTA_DATA(a);
            break;
        case RTA_DST: {
            size_t n = RTA_PAYLOAD(a);
            if (n > sizeof(item->dst)) n = sizeof(item->dst);
            memcpy(item->dst, RTA_DATA(a), n);
            break;
        }
        case RTA_OIF:
            if (RTA_PAYLOAD(a) >= 4) item->oif = *(const int *)RTA_DATA(a);
            break;
        case RTA_PRIORITY:
            if (RTA_PAYLOAD(a) >= 4) item->priority = *(const uint32_t *)RTA_DATA(a);
            break;
        case RTA_MULTIPATH:
            // Several next hops: the first the kernel routes through stands for the route. (The
            // first alone stood for it: with its link down, the kernel keeps the route and uses
            // the others, and the route was read as not reachable.)
            if (item->oif == 0) item->oif = first_live_hop(a);
            break;
        default:
            break;
        }
    }
}

int courier_nl_next(const void *buffer, size_t length, size_t *offset, struct courier_nl_item *item) {
    memset(item, 0, sizeof(*item));
    if (*offset >= length) return item->kind = COURIER_NL_END;
    const struct nlmsghdr *header = (const struct nlmsghdr *)((const char *)buffer + *offset);
    int remaining = (int)(length - *offset);
    if (!NLMSG_OK(header, remaining)) return item->kind = COURIER_NL_END;
    *offset += NLMSG_ALIGN(header->nlmsg_len);
    item->seq = header->nlmsg_seq;
    switch (header->nlmsg_type) {
    case NLMSG_DONE:
        item->kind = COURIER_NL_DONE;
        // The kernel puts the dump's own result after the header (netlink_dump_done): a negative
        // errno when the dump failed part way. A dump the kernel saw change while it ran carries
        // NLM_F_DUMP_INTR (on its DONE too): its links and routes may not agree, say -EINTR.
        if (header->nlmsg_len >= NLMSG_LENGTH(sizeof(int))) item->error = *(const int *)NLMSG_DATA(header);
        if (item->error == 0 && (header->nlmsg_flags & NLM_F_DUMP_INTR)) item->error = -EINTR;
        break;
    case NLMSG_ERROR: {
        item->kind = COURIER_NL_ERROR;
        if (header->nlmsg_len >= NLMSG_LENGTH(sizeof(struct nlmsgerr))) {
            const struct nlmsgerr *error = NLMSG_DATA(header);
            item->error = error->error;
        }
        break;
    }
    case RTM_NEWLINK:
        if (header->nlmsg_len >= NLMSG_LENGTH(sizeof(struct ifinfomsg))) {
            item->kind = COURIER_NL_LINK;
            read_link(header, item);
        } else {
            item->kind = COURIER_NL_OTHER;
        }
        break;
    case RTM_NEWROUTE:
        if (header->nlmsg_len >= NLMSG_LENGTH(sizeof(struct rtmsg))) {
            item->kind = COURIER_NL_ROUTE;
            read_route(header, item);
        } else {
            item->kind = COURIER_NL_OTHER;
        }
        break;
    default:
        item->kind = COURIER_NL_OTHER;
        break;
    }
    return item->kind;
}

int courier_enter_netns(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    int result = setns(fd, CLONE_NEWNET);
    int error = errno;
    close(fd);
    return result < 0 ? -error : 0;
}

int courier_gettid(void) {
    return (int)syscall(SYS_gettid);
}

int courier_wake_pipe(int ends[2]) {
    return pipe2(ends, O_CLOEXEC) < 0 ? -errno : 0;
}

unsigned long long courier_inode(int fd) {
    struct stat info;
    return fstat(fd, &info) == 0 ? (unsigned long long)info.st_ino : 0;
}

#else
// Apple platforms use the Network framework; the functions exist so the module links everywhere.
#include <errno.h>
#include "CCourierNetlink.h"
int courier_nl_open(int subscribe) { (void)subscribe; return -ENOSYS; }
int courier_nl_request_dump(int fd, int links, unsigned int seq) { (void)fd; (void)links; (void)seq; return -ENOSYS; }
int courier_nl_next(const void *b, size_t l, size_t *o, struct courier_nl_item *i) { (void)b; (void)l; (void)o; i->kind = COURIER_NL_END; return COURIER_NL_END; }
int courier_enter_netns(const char *path) { (void)path; return -ENOSYS; }
int courier_gettid(void) { return 0; }
int courier_wake_pipe(int ends[2]) { (void)ends; return -ENOSYS; }
unsigned long long courier_inode(int fd) { (void)fd; return 0; }
#endif
