/*
 * backend.c: the byte echo HAProxy forwards to, over TCP loopback.
 *
 * One thread, one level-triggered epoll set. Each connection has a 64 KiB
 * buffer; it is read only while the buffer has room and written whenever
 * it holds bytes, so a peer (HAProxy) that stops reading stops this side's
 * reading too (backpressure: at most 64 KiB held here per connection, the
 * rest stays in the kernel's socket buffers). At EOF the buffer is flushed,
 * then shutdown(SHUT_WR) and close: every echo, then FIN. A reset or any
 * other error (EPOLLERR, a failed read or write) closes the descriptor at
 * once. At EMFILE/ENFILE the listener leaves the epoll set for 100 ms.
 * Its sockets' kernel buffers are fixed at 256 KiB each way (SO_RCVBUF,
 * SO_SNDBUF on the listening socket, inherited by each accepted one), so
 * that what the loopback hop between HAProxy and this echo can hold for a
 * client is bounded by configuration, not by the kernel's autotuning
 * maxima (net.ipv4.tcp_rmem here allows 32 MiB a socket).
 *
 * It listens on 127.0.0.1, port 0 (the kernel picks a free one), and writes
 * that port to the file argv[1] (written to argv[1].tmp, then renamed), so
 * the script that starts HAProxy can put it in the configuration without a
 * race. That script then execs HAProxy, which so becomes this process's
 * parent: the two live and die together. This process asks for SIGTERM when
 * its parent dies (PR_SET_PDEATHSIG), exits 0 on SIGTERM/SIGINT, and after
 * $LIFETIME_S seconds (default 3600) sends SIGTERM to its parent (HAProxy's
 * hard stop) and exits: that is the pair's lifetime.
 *
 * To test it alone (it is itself a black-box byte echo): backend PORTFILE
 * HOST:PORT listens on 127.0.0.1 at that port instead, with neither the
 * death signal nor the SIGTERM to its parent, e.g.
 *   reactorlab conform --target cmd:'exec ./backend - {addr}'  (- : no port file)
 *
 * Build: cc -O2 -Wall -o backend backend.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF (64 * 1024)

struct conn {
	int fd;
	int eof;          /* the peer shut down its side: flush, then close */
	size_t off, len;  /* bytes buf[off..len) still to be written back */
	unsigned events;  /* what the epoll set polls the socket for */
	char buf[BUF];
};

static int ep, lfd;
static volatile sig_atomic_t stop;

static void on_signal(int sig) { stop = 1; }

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void drop(struct conn *c)
{
	close(c->fd); /* also removes it from the epoll set */
	free(c);
}

/* Poll for reading while the buffer has room and the peer has not shut
 * down; for writing while bytes are owed. */
static int repoll(struct conn *c)
{
	unsigned want = 0;
	if (!c->eof && c->len < BUF)
		want |= EPOLLIN;
	if (c->off < c->len)
		want |= EPOLLOUT;
	if (want == c->events)
		return 0;
	struct epoll_event ev = {.events = want, .data.ptr = c};
	c->events = want;
	return epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Serve one readiness event; 0 keeps the connection, -1 drops it. */
static int serve(struct conn *c, unsigned ev)
{
	if (ev & EPOLLERR)
		return -1;
	if ((ev & (EPOLLIN | EPOLLHUP)) && !c->eof && c->len < BUF) {
		ssize_t n = recv(c->fd, c->buf + c->len, BUF - c->len, 0);
		if (n > 0)
			c->len += (size_t)n;
		else if (n == 0)
			c->eof = 1;
		else if (errno != EAGAIN && errno != EINTR)
			return -1;
	}
	while (c->off < c->len) {
		ssize_t n = send(c->fd, c->buf + c->off, c->len - c->off, MSG_NOSIGNAL);
		if (n > 0) {
			c->off += (size_t)n;
			continue;
		}
		if (errno == EAGAIN || errno == EINTR)
			break;
		return -1;
	}
	if (c->off == c->len)
		c->off = c->len = 0; /* all written: the whole buffer is free */
	if (c->eof && c->off == c->len) {
		shutdown(c->fd, SHUT_WR); /* every echo sent: FIN */
		return -1;
	}
	return repoll(c);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: backend PORTFILE|- [HOST:PORT]\n");
		return 2;
	}
	const char *alone = argc > 2 ? strrchr(argv[2], ':') : NULL;
	if (!alone)
		prctl(PR_SET_PDEATHSIG, SIGTERM); /* HAProxy, once run.sh exec'd it */
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	const char *life = getenv("LIFETIME_S");
	long deadline = now_ms() + (life && *life ? atol(life) : 3600) * 1000L;

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct sockaddr_in sin = {.sin_family = AF_INET,
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	    .sin_port = htons(alone ? atoi(alone + 1) : 0)};
	int one = 1, buf = 256 * 1024;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	setsockopt(lfd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	socklen_t sl = sizeof(sin);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    listen(lfd, 4096) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sin, &sl) < 0) {
		perror("backend: listen");
		return 1;
	}
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
	FILE *f = strcmp(argv[1], "-") ? fopen(tmp, "w") : NULL;
	if (strcmp(argv[1], "-") &&
	    (!f || fprintf(f, "%d\n", ntohs(sin.sin_port)) < 0 || fclose(f) != 0 ||
	     rename(tmp, argv[1]) < 0)) {
		perror("backend: port file");
		return 1;
	}
	if (alone)
		fprintf(stderr, "backend: echo on 127.0.0.1:%d\n", ntohs(sin.sin_port));

	ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev);
	long resume = 0; /* when the listener goes back in after EMFILE */

	while (!stop) {
		long t = now_ms();
		if (t >= deadline) {
			if (!alone)
				kill(getppid(), SIGTERM); /* HAProxy */
			break;
		}
		if (resume && t >= resume) {
			epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev);
			resume = 0;
		}
		long wait = deadline - t;
		if (resume && resume - t < wait)
			wait = resume - t;
		struct epoll_event evs[64];
		int n = epoll_wait(ep, evs, 64, (int)wait);
		for (int i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;
			if (c) {
				if (serve(c, evs[i].events) < 0)
					drop(c);
				continue;
			}
			for (;;) { /* accept until EAGAIN */
				int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
				if (fd < 0) {
					if (errno == EMFILE || errno == ENFILE ||
					    errno == ENOBUFS || errno == ENOMEM) {
						epoll_ctl(ep, EPOLL_CTL_DEL, lfd, NULL);
						resume = now_ms() + 100;
					}
					break; /* EAGAIN, or an aborted connection */
				}
				struct conn *nc = calloc(1, sizeof(*nc));
				if (!nc) {
					close(fd);
					continue;
				}
				nc->fd = fd;
				nc->events = EPOLLIN;
				struct epoll_event ev = {.events = EPOLLIN, .data.ptr = nc};
				if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
					drop(nc);
			}
		}
	}
	return 0;
}
