/*
 * pollpair.c: a TCP byte-echo server of two threads that share one
 * listening socket, each waiting in poll(2) on it and on the connections
 * it accepted itself.
 *
 * The bug it carries is the thundering herd of two: poll's waits are
 * never exclusive, so every connection wakes both threads; one accepts it
 * and the other finds the queue empty (accept4: EAGAIN) or is sent back to
 * sleep inside poll when the kernel re-polls the listener. Seen from
 * outside, two threads woken for every connection also look like an
 * acceptor handing each connection to one loop: only the two threads seen
 * blocked in poll with the listener in their lists tell them apart.
 *
 * Each thread owns what it accepts (no hand-over): a connection is polled
 * for POLLIN while nothing is pending, read into its 64 KiB buffer and
 * written back; what the socket does not take is pending, the connection
 * is polled for POLLOUT only, and nothing more is read until it is
 * written (backpressure). EMFILE: the thread leaves the listener out of
 * its poll list for 10 ms to 1 s (doubling), so a full table is no spin.
 *
 * Address: $REACTORLAB_LISTEN, else argv[1] (host:port, [v6]:port, :port).
 * Lifetime: argv[2] or $OWN_LIFETIME in seconds (default 3600).
 * SIGTERM / SIGINT / end of lifetime: exit status 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NTHREADS 2
#define MAX_CONNS 4096 /* per thread; beyond it the listener is left out */
#define BUF_SIZE (64 * 1024)
#define ACCEPTS_PER_WAKE 64
#define BACKOFF_MIN_MS 10
#define BACKOFF_MAX_MS 1000

struct conn {
    int fd;
    char *buf;
    size_t off, len; /* buf[off:len] is read and not yet written back */
};

struct poller {
    int id;
    int nconns;
    struct conn conns[MAX_CONNS];
    struct pollfd fds[1 + MAX_CONNS];
    int64_t listener_back_ms; /* while now < it, the listener is left out (EMFILE) */
    long backoff_ms;
};

static int lfd = -1;
static long lifetime_s = 3600;

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *what) {
    fprintf(stderr, "own-pollpair: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* conn_drop closes conns[i] and moves the last connection into its place. */
static void conn_drop(struct poller *p, int i) {
    close(p->conns[i].fd);
    free(p->conns[i].buf);
    p->conns[i] = p->conns[--p->nconns];
}

/* conn_flush writes the pending bytes: 0 when all are written or the
 * socket is full, -1 when the connection is gone. */
static int conn_flush(struct conn *c) {
    while (c->off < c->len) {
        ssize_t n = send(c->fd, c->buf + c->off, c->len - c->off, MSG_NOSIGNAL);
        if (n > 0) {
            c->off += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return 0;
        } else {
            return -1;
        }
    }
    c->off = c->len = 0;
    return 0;
}

/* conn_serve runs one connection's turn for what poll reported: -1 when
 * it is to be closed. */
static int conn_serve(struct conn *c, short revents) {
    if (c->off < c->len) {
        if (revents & (POLLOUT | POLLERR | POLLHUP))
            return conn_flush(c);
        return 0;
    }
    if (!(revents & (POLLIN | POLLERR | POLLHUP)))
        return 0;
    ssize_t n = recv(c->fd, c->buf, BUF_SIZE, 0);
    if (n > 0) {
        c->off = 0;
        c->len = (size_t)n;
        return conn_flush(c);
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return 0;
    /* EOF with nothing pending (nothing is read while bytes are), or an
     * error: every byte read has been written back. */
    return -1;
}

static void accept_some(struct poller *p) {
    for (int k = 0; k < ACCEPTS_PER_WAKE && p->nconns < MAX_CONNS; k++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                p->listener_back_ms = now_ms() + p->backoff_ms;
                p->backoff_ms = p->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : p->backoff_ms * 2;
            }
            return; /* EAGAIN: the other thread took it, or the queue is empty */
        }
        p->backoff_ms = BACKOFF_MIN_MS;
        char *buf = malloc(BUF_SIZE);
        if (buf == NULL) {
            close(fd);
            return;
        }
        p->conns[p->nconns++] = (struct conn){.fd = fd, .buf = buf};
    }
}

static void *poller_main(void *arg) {
    struct poller *p = arg;
    p->backoff_ms = BACKOFF_MIN_MS;
    for (;;) {
        int64_t now = now_ms();
        int watch = p->nconns < MAX_CONNS && now >= p->listener_back_ms;
        int timeout = -1;
        if (!watch && p->nconns < MAX_CONNS)
            timeout = (int)(p->listener_back_ms - now);
        /* fds[0] is the listener (fd -1, ignored, while left out). */
        p->fds[0] = (struct pollfd){.fd = watch ? lfd : -1, .events = POLLIN};
        for (int i = 0; i < p->nconns; i++) {
            struct conn *c = &p->conns[i];
            p->fds[1 + i] = (struct pollfd){.fd = c->fd, .events = c->off < c->len ? POLLOUT : POLLIN};
        }
        int n = poll(p->fds, (nfds_t)(1 + p->nconns), timeout);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("poll");
        }
        /* Serve the connections polled (from the end: a dropped one takes
         * the last one's place, which has been served already). */
        for (int i = p->nconns - 1; i >= 0; i--) {
            if (p->fds[1 + i].revents && conn_serve(&p->conns[i], p->fds[1 + i].revents) < 0)
                conn_drop(p, i);
        }
        if (watch && (p->fds[0].revents & POLLIN))
            accept_some(p);
    }
    return NULL;
}

static int open_listener(const char *addr) {
    char host[256], port[32];
    const char *colon = strrchr(addr, ':');
    if (colon == NULL) {
        fprintf(stderr, "own-pollpair: address \"%s\" must be host:port\n", addr);
        exit(2);
    }
    size_t hl = (size_t)(colon - addr);
    const char *h = addr;
    if (hl >= 2 && addr[0] == '[' && addr[hl - 1] == ']') {
        h = addr + 1;
        hl -= 2;
    }
    if (hl >= sizeof host || strlen(colon + 1) >= sizeof port) {
        fprintf(stderr, "own-pollpair: address too long\n");
        exit(2);
    }
    memcpy(host, h, hl);
    host[hl] = 0;
    strcpy(port, colon + 1);

    struct addrinfo hints, *res, *ai;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    int rc = getaddrinfo(hl ? host : NULL, port, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "own-pollpair: resolve %s: %s\n", addr, gai_strerror(rc));
        exit(2);
    }
    int fd = -1;
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0)
            continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 4096) == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        die("listen");

    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char hb[INET6_ADDRSTRLEN] = "?", pb[16] = "?";
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        getnameinfo((struct sockaddr *)&ss, sl, hb, sizeof hb, pb, sizeof pb,
                    NI_NUMERICHOST | NI_NUMERICSERV);
    fprintf(stderr, "own-pollpair: listening on %s%s%s:%s with %d threads in poll(2)\n",
            ss.ss_family == AF_INET6 ? "[" : "", hb,
            ss.ss_family == AF_INET6 ? "]" : "", pb, NTHREADS);
    return fd;
}

int main(int argc, char **argv) {
    const char *addr = getenv("REACTORLAB_LISTEN");
    if (addr == NULL || *addr == 0)
        addr = argc > 1 ? argv[1] : NULL;
    if (addr == NULL) {
        fprintf(stderr, "usage: %s host:port [lifetime-seconds] (or $REACTORLAB_LISTEN)\n", argv[0]);
        return 2;
    }
    const char *lt = argc > 2 ? argv[2] : getenv("OWN_LIFETIME");
    if (lt != NULL && atol(lt) > 0)
        lifetime_s = atol(lt);

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* inherited by the pollers */
    /* A shell may start us with SIGINT ignored; a blocked signal whose
     * disposition is SIG_IGN is discarded, so restore the default first. */
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGPIPE, SIG_IGN);

    lfd = open_listener(addr);

    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    for (int i = 0; i < NTHREADS; i++) {
        struct poller *p = calloc(1, sizeof *p);
        if (p == NULL)
            die("calloc");
        p->id = i;
        pthread_t t;
        if (pthread_create(&t, &attr, poller_main, p) != 0)
            die("pthread_create");
    }

    /* The main thread waits for a signal or the end of the lifetime. */
    int64_t deadline = now_ms() + (int64_t)lifetime_s * 1000;
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0)
            break;
        struct timespec ts = {left / 1000, (left % 1000) * 1000000L};
        int sig = sigtimedwait(&set, NULL, &ts);
        if (sig > 0)
            break;
        if (errno == EAGAIN)
            break;
    }
    _exit(0);
}
