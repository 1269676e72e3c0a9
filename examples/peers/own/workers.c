/*
 * workers.c: a TCP byte-echo server on 4 worker threads, each with its own
 * epoll instance. Connection sockets are non-blocking and registered once,
 * edge-triggered (EPOLLIN|EPOLLOUT|EPOLLRDHUP|EPOLLET), never modified.
 *
 * Accepting: one listening socket, added to every worker's epoll set with
 * EPOLLEXCLUSIVE (level-triggered), so one idle worker is woken per incoming
 * connection rather than all four. The worker that accepts a connection owns
 * it for its whole life.
 *
 * Built with -DWORKERS_HERD the listener is added to every set WITHOUT
 * EPOLLEXCLUSIVE: each incoming connection then wakes all four idle workers,
 * one accepts it and the others find the queue empty (epoll_wait re-polls the
 * listener and sleeps again, or accept4 says EAGAIN): the thundering herd,
 * kept as a variant (workers-herd.peer) to show it from the outside.
 *
 * Per connection: a 128 KiB ring buffer. When it is full the connection is
 * not read (backpressure) until writes make room; since edge-triggered epoll
 * will not report input that was already there, the connection remembers it
 * was not drained ("readable") and resumes reading as soon as there is room.
 * Each turn on a connection reads at most READ_BUDGET bytes; a connection with
 * work left goes on the worker's ready list and is resumed after the other
 * ready connections, so a hot connection cannot starve the others.
 *
 * EMFILE/ENFILE (or ENOBUFS/ENOMEM) on accept: the worker removes the listener
 * from its epoll set and re-adds it after an exponential backoff (10 ms to
 * 1 s), so a full descriptor table costs no CPU and accepting resumes by itself.
 *
 * Address: $REACTORLAB_LISTEN, else argv[1]. Lifetime: argv[2] or
 * $OWN_LIFETIME seconds (default 3600). SIGTERM/SIGINT/lifetime: exit 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define NWORKERS 4
#define BUF_SIZE (128 * 1024)
#define READ_BUDGET (256 * 1024)
#define ACCEPT_BATCH 64
#define MAX_EVENTS 256
#define BACKOFF_MIN_MS 10
#define BACKOFF_MAX_MS 1000

struct conn {
    int fd;
    char *buf;
    size_t head, len; /* ring buffer: bytes [head, head+len) mod BUF_SIZE */
    unsigned readable : 1, writable : 1, eof : 1, queued : 1;
    struct conn *prev, *next; /* ready list */
};

struct worker {
    int id;
    int ep;
    int listening;  /* listener currently in this epoll set */
    long backoff_ms;
    int64_t rearm_at_ms;
    struct conn ready; /* sentinel of the ready list */
};

static int lfd = -1;
static long lifetime_s = 3600;
static char listener_tag; /* its address marks the listener in epoll data */

/* How the listener is added to each worker's set (see the file comment). */
#ifdef WORKERS_HERD
#define LISTENER_EVENTS EPOLLIN
#define LISTENER_MODE "without EPOLLEXCLUSIVE (herd)"
#else
#define LISTENER_EVENTS (EPOLLIN | EPOLLEXCLUSIVE)
#define LISTENER_MODE "with EPOLLEXCLUSIVE"
#endif

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *what) {
    fprintf(stderr, "own-workers: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void ready_push(struct worker *w, struct conn *c) {
    if (c->queued)
        return;
    c->queued = 1;
    c->prev = w->ready.prev;
    c->next = &w->ready;
    w->ready.prev->next = c;
    w->ready.prev = c;
}

static void ready_remove(struct conn *c) {
    if (!c->queued)
        return;
    c->prev->next = c->next;
    c->next->prev = c->prev;
    c->prev = c->next = NULL;
    c->queued = 0;
}

static void conn_close(struct conn *c) {
    ready_remove(c);
    close(c->fd); /* also removes it from the epoll set */
    free(c->buf);
    free(c);
}

/*
 * Runs a connection as far as it can go within the budget. Returns with the
 * connection either closed, waiting for an epoll edge, or on the ready list.
 */
static void conn_run(struct worker *w, struct conn *c) {
    size_t budget = READ_BUDGET;
    for (;;) {
        /* Output first: it makes room for input. */
        while (c->len > 0 && c->writable) {
            size_t chunk = BUF_SIZE - c->head;
            if (chunk > c->len)
                chunk = c->len;
            ssize_t n = send(c->fd, c->buf + c->head, chunk, MSG_NOSIGNAL);
            if (n > 0) {
                c->head = (c->head + (size_t)n) % BUF_SIZE;
                c->len -= (size_t)n;
            } else if (n < 0 && errno == EINTR) {
                continue;
            } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                c->writable = 0; /* wait for EPOLLOUT */
            } else {
                conn_close(c); /* reset / broken pipe */
                return;
            }
        }
        if (c->len == 0)
            c->head = 0;
        if (c->eof && c->len == 0) {
            /* Half-closed by the peer and everything is flushed: FIN, done.
             * Input was read to EOF, so close() will not send a reset. */
            shutdown(c->fd, SHUT_WR);
            conn_close(c);
            return;
        }
        if (!c->readable || c->eof || c->len == BUF_SIZE)
            return; /* waiting for an edge (input, or room via EPOLLOUT) */
        if (budget == 0) {
            ready_push(w, c); /* more input may be waiting: resume later */
            return;
        }
        size_t tail = (c->head + c->len) % BUF_SIZE;
        /* len < BUF_SIZE here, so tail == head only when empty */
        size_t room = tail >= c->head ? BUF_SIZE - tail : c->head - tail;
        if (room > budget)
            room = budget;
        ssize_t n = recv(c->fd, c->buf + tail, room, 0);
        if (n > 0) {
            c->len += (size_t)n;
            budget -= (size_t)n;
        } else if (n == 0) {
            c->eof = 1;
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            c->readable = 0;
        } else {
            conn_close(c);
            return;
        }
    }
}

static void listener_add(struct worker *w) {
    struct epoll_event ev = {.events = LISTENER_EVENTS, .data.ptr = &listener_tag};
    if (epoll_ctl(w->ep, EPOLL_CTL_ADD, lfd, &ev) == 0)
        w->listening = 1;
    else
        w->rearm_at_ms = now_ms() + BACKOFF_MAX_MS;
}

static void accept_some(struct worker *w) {
    for (int i = 0; i < ACCEPT_BATCH; i++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            switch (errno) {
            case EAGAIN:
#if EAGAIN != EWOULDBLOCK
            case EWOULDBLOCK:
#endif
                return;
            case EINTR:
            case ECONNABORTED:
            case EPROTO:
                continue;
            default: /* EMFILE, ENFILE, ENOBUFS, ENOMEM, ... */
                w->backoff_ms = w->backoff_ms ? w->backoff_ms * 2 : BACKOFF_MIN_MS;
                if (w->backoff_ms > BACKOFF_MAX_MS)
                    w->backoff_ms = BACKOFF_MAX_MS;
                epoll_ctl(w->ep, EPOLL_CTL_DEL, lfd, NULL);
                w->listening = 0;
                w->rearm_at_ms = now_ms() + w->backoff_ms;
                return;
            }
        }
        w->backoff_ms = 0;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct conn *c = calloc(1, sizeof *c);
        char *buf = c ? malloc(BUF_SIZE) : NULL;
        if (buf == NULL) {
            free(c);
            close(fd);
            continue;
        }
        c->fd = fd;
        c->buf = buf;
        c->readable = 1;
        c->writable = 1;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = c};
        if (epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
            free(buf);
            free(c);
            close(fd);
            continue;
        }
        /* The registration reports the socket's current state as an edge. */
    }
}

static void *worker_main(void *arg) {
    struct worker *w = arg;
    struct epoll_event evs[MAX_EVENTS];
    w->ready.prev = w->ready.next = &w->ready;
    listener_add(w);
    for (;;) {
        int timeout = -1;
        if (w->ready.next != &w->ready) {
            timeout = 0;
        } else if (!w->listening) {
            int64_t left = w->rearm_at_ms - now_ms();
            timeout = left > 0 ? (int)left : 0;
        }
        int n = epoll_wait(w->ep, evs, MAX_EVENTS, timeout);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("epoll_wait");
        }
        if (!w->listening && now_ms() >= w->rearm_at_ms)
            listener_add(w);

        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == &listener_tag) {
                if (w->listening)
                    accept_some(w);
                continue;
            }
            struct conn *c = evs[i].data.ptr;
            uint32_t e = evs[i].events;
            if (e & EPOLLERR) {
                conn_close(c); /* reset: release at once, whatever its state */
                continue;
            }
            if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP))
                c->readable = 1;
            if (e & (EPOLLOUT | EPOLLHUP))
                c->writable = 1;
            if (c->queued)
                continue; /* will run from the ready list */
            conn_run(w, c);
        }

        /* Resume each connection that is on the ready list now, once; those
         * it re-queues wait for the next pass, after fresh events. */
        struct conn *last = w->ready.prev == &w->ready ? NULL : w->ready.prev;
        if (last != NULL) {
            for (;;) {
                struct conn *c = w->ready.next;
                if (c == &w->ready)
                    break;
                int was_last = (c == last);
                ready_remove(c);
                conn_run(w, c);
                if (was_last)
                    break;
            }
        }
    }
    return NULL;
}

static int open_listener(const char *addr) {
    char host[256], port[32];
    const char *colon = strrchr(addr, ':');
    if (colon == NULL) {
        fprintf(stderr, "own-workers: address \"%s\" must be host:port\n", addr);
        exit(2);
    }
    size_t hl = (size_t)(colon - addr);
    const char *h = addr;
    if (hl >= 2 && addr[0] == '[' && addr[hl - 1] == ']') {
        h = addr + 1;
        hl -= 2;
    }
    if (hl >= sizeof host || strlen(colon + 1) >= sizeof port) {
        fprintf(stderr, "own-workers: address too long\n");
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
        fprintf(stderr, "own-workers: resolve %s: %s\n", addr, gai_strerror(rc));
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
    fprintf(stderr, "own-workers: listening on %s%s%s:%s with %d workers, the listener %s\n",
            ss.ss_family == AF_INET6 ? "[" : "", hb,
            ss.ss_family == AF_INET6 ? "]" : "", pb, NWORKERS, LISTENER_MODE);
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
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* inherited by the workers */
    /* A shell may start us with SIGINT ignored; a blocked signal whose
     * disposition is SIG_IGN is discarded, so restore the default first. */
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGPIPE, SIG_IGN);

    lfd = open_listener(addr);

    static struct worker workers[NWORKERS];
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    for (int i = 0; i < NWORKERS; i++) {
        workers[i].id = i;
        workers[i].ep = epoll_create1(EPOLL_CLOEXEC);
        if (workers[i].ep < 0)
            die("epoll_create1");
        pthread_t t;
        if (pthread_create(&t, &attr, worker_main, &workers[i]) != 0)
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
