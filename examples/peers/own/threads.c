/*
 * threads.c: a TCP byte-echo server, one thread per connection, blocking I/O.
 *
 * Each connection's thread reads into a 64 KiB buffer and writes all of it
 * back before reading again, so at most 64 KiB (plus the kernel's socket
 * buffers) is ever held per connection: a client that does not read blocks
 * its own thread in send(), which stops the reading of that connection
 * (backpressure), and nothing else.
 *
 * Address: $REACTORLAB_LISTEN, else argv[1] (host:port, [v6]:port, :port).
 * Lifetime: argv[2] or $OWN_LIFETIME in seconds (default 3600).
 * SIGTERM / SIGINT / end of lifetime: exit status 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define BUF_SIZE (64 * 1024)
#define STACK_SIZE (128 * 1024)
#define BACKOFF_MIN_MS 5
#define BACKOFF_MAX_MS 1000

static void die(const char *what) {
    fprintf(stderr, "own-threads: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

/* Write all of buf; 0 on success, -1 if the connection is gone. */
static int write_all(int fd, const char *buf, size_t len) {
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            return -1;
        }
    }
    return 0;
}

static void *serve(void *arg) {
    int fd = (int)(long)arg;
    char *buf = malloc(BUF_SIZE);
    if (buf == NULL) {
        close(fd);
        return NULL;
    }
    for (;;) {
        ssize_t n = recv(fd, buf, BUF_SIZE, 0);
        if (n > 0) {
            if (write_all(fd, buf, (size_t)n) < 0)
                break; /* reset or broken: release */
        } else if (n == 0) {
            /* Peer half-closed; everything read has already been written
             * (write_all returned), so send our FIN now. No unread input
             * remains, so close() will not turn into a reset. */
            shutdown(fd, SHUT_WR);
            break;
        } else if (errno == EINTR) {
            continue;
        } else {
            break; /* ECONNRESET etc. */
        }
    }
    free(buf);
    close(fd);
    return NULL;
}

static int open_listener(const char *addr) {
    char host[256], port[32];
    const char *colon = strrchr(addr, ':');
    if (colon == NULL) {
        fprintf(stderr, "own-threads: address \"%s\" must be host:port\n", addr);
        exit(2);
    }
    size_t hl = (size_t)(colon - addr);
    const char *h = addr;
    if (hl >= 2 && addr[0] == '[' && addr[hl - 1] == ']') {
        h = addr + 1;
        hl -= 2;
    }
    if (hl >= sizeof host || strlen(colon + 1) >= sizeof port) {
        fprintf(stderr, "own-threads: address too long\n");
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
        fprintf(stderr, "own-threads: resolve %s: %s\n", addr, gai_strerror(rc));
        exit(2);
    }
    int fd = -1;
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
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
    fprintf(stderr, "own-threads: listening on %s%s%s:%s\n",
            ss.ss_family == AF_INET6 ? "[" : "", hb,
            ss.ss_family == AF_INET6 ? "]" : "", pb);
    return fd;
}

static long lifetime_s = 3600;

/* Waits for SIGTERM/SIGINT or the end of the lifetime, then exits 0. */
static void *signal_thread(void *arg) {
    sigset_t *set = arg;
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += lifetime_s;
    for (;;) {
        struct timespec now, left;
        clock_gettime(CLOCK_MONOTONIC, &now);
        left.tv_sec = deadline.tv_sec - now.tv_sec;
        left.tv_nsec = deadline.tv_nsec - now.tv_nsec;
        if (left.tv_nsec < 0) {
            left.tv_nsec += 1000000000L;
            left.tv_sec--;
        }
        if (left.tv_sec < 0)
            break;
        int sig = sigtimedwait(set, NULL, &left);
        if (sig > 0)
            break;
        if (errno == EAGAIN)
            break; /* lifetime over */
    }
    _exit(0);
    return NULL;
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

    /* Every thread inherits this mask; only the signal thread takes them. */
    static sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    /* A shell may start us with SIGINT ignored; a blocked signal whose
     * disposition is SIG_IGN is discarded, so restore the default first. */
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGPIPE, SIG_IGN);

    int lfd = open_listener(addr);

    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, STACK_SIZE);

    pthread_t st;
    if (pthread_create(&st, &attr, signal_thread, &set) != 0)
        die("signal thread");

    long backoff = 0;
    for (;;) {
        int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (cfd < 0) {
            switch (errno) {
            case EINTR:
            case ECONNABORTED:
            case EPROTO:
                continue;
            case EMFILE:
            case ENFILE:
            case ENOBUFS:
            case ENOMEM:
            default:
                /* Out of descriptors or memory: pending connections stay in
                 * the backlog; retry with exponential backoff, never spin. */
                backoff = backoff ? backoff * 2 : BACKOFF_MIN_MS;
                if (backoff > BACKOFF_MAX_MS)
                    backoff = BACKOFF_MAX_MS;
                sleep_ms(backoff);
                continue;
            }
        }
        backoff = 0;
        int one = 1;
        setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        pthread_t t;
        int err = pthread_create(&t, &attr, serve, (void *)(long)cfd);
        if (err != 0) {
            /* No thread to serve it: shed this connection and back off. */
            close(cfd);
            fprintf(stderr, "own-threads: pthread_create: %s\n", strerror(err));
            sleep_ms(50);
        }
    }
}
