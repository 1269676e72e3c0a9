/*
 * Byte echo on liburing, in the idiom of liburing's own TCP echo example
 * (axboe/liburing examples/echo-server.c, and the man pages
 * io_uring_prep_multishot_accept(3), io_uring_prep_recv_multishot(3),
 * io_uring_register_buf_ring(3), io_uring_buf_ring_add(3)): one ring, one
 * multishot accept on the listener, one multishot recv per connection that
 * takes its buffers from a provided buffer ring (IOSQE_BUFFER_SELECT), each
 * buffer given back to the ring (io_uring_buf_ring_add, _advance) once the
 * loop is done with it, io_uring_prep_send for the echo, a multishot re-armed
 * when its CQE comes without IORING_CQE_F_MORE. With what that example
 * leaves out or gets wrong for an echo that must hold up:
 *
 * - Buffer ring. Deliberately small, 16 buffers of 4 KiB shared by every
 *   connection (the example has 256), so that a burst exhausts it: the
 *   multishot recv then ends with -ENOBUFS. The data of each recv CQE is
 *   copied into the connection's out-queue and the buffer given back at
 *   once, so a connection whose client does not read never pins ring
 *   buffers that every other connection needs (the example sends from the
 *   ring buffer and recycles it when the send completes: one stalled client
 *   then holds the whole ring).
 * - -ENOBUFS is not an error and not the end of the stream: the recv has
 *   ended with data left in the socket because no buffer was free. Every
 *   buffer is given back before the loop waits again, and the recv of every
 *   connection it ended is re-armed then (the example re-arms only from that
 *   same connection's next send completion: a connection with no send in
 *   flight is never re-armed).
 * - Partial sends. A send's result may be less than its length: the rest is
 *   sent next (the example's "TODO: handle short sends"). One send in flight
 *   per connection, from its out-queue, keeps the echo in order.
 * - Backpressure. Above HIGH bytes queued the connection's recv is cancelled
 *   (io_uring_prep_cancel64 on its user_data; the data already received is
 *   still posted) and not re-armed until the queue is below LOW.
 * - EOF (a recv result of 0) closes the connection only once every queued
 *   byte is sent; a recv or send error closes it at once. Closing cancels
 *   the connection's operations still in flight (an operation holds its own
 *   reference to the socket: closing the descriptor alone would leave the
 *   socket open until it ended). Completions are routed by the connection's
 *   address, never by descriptor number, and a connection is freed only
 *   once none of its operations is in flight.
 * - EMFILE. A multishot accept ends on an error; at EMFILE or ENFILE the
 *   connection stays pending and the listener readable, so re-arming at
 *   once would spin (the example re-arms at once): it is re-armed after a
 *   100 ms timeout.
 *
 * Built with -DENOBUFS_AS_EOF (enobufs-eof.peer) a recv ended by -ENOBUFS is
 * taken as the end of the client's stream: the connection is closed once
 * its queued echoes are sent, as at EOF. The bug real code has when it
 * treats every recv result <= 0 other than a listed error as the end.
 *
 * Built with -DOVERFLOW_IGNORED (overflow-ignored.peer) the completion queue
 * has 8 entries (IORING_SETUP_CQSIZE, 4 submission entries) and the loop
 * drives the ring itself, as runtimes on their own bindings do: it publishes
 * its submissions and enters without IORING_ENTER_GETEVENTS, then blocks on
 * an eventfd registered with the ring (io_uring_register_eventfd) until the
 * kernel posts a completion, and reaps what the CQ ring holds. It never
 * checks IORING_SQ_CQ_OVERFLOW (io_uring_cq_has_overflow): the completions
 * the kernel had to keep past the 8 entries (IORING_FEAT_NODROP: kept, not
 * dropped) stay in its overflow list, which only an enter with GETEVENTS
 * flushes; the completions posted behind them join that list, the CQ tail
 * no longer moves, the eventfd is not signalled, and the connections they
 * belong to stall. (liburing's own io_uring_submit and waits flush the list
 * whenever the flag is set: the bug needs a loop that bypasses them.)
 *
 * Built with -DCLOSE_NO_CANCEL (close-no-cancel.peer) completions are routed
 * by descriptor number (user_data holds the fd; a table indexed by fd holds
 * the connection) and a connection is closed without cancelling what is in
 * flight: at the client's EOF (a recv result of 0) it is closed at once, the
 * common idiom, its slot freed, the send in flight left to the kernel (it
 * holds its own reference to the socket) and the echoes not yet sent
 * dropped. The descriptor number is free at once and the next connection
 * accepted gets it; the old send's completion, when it comes (the old
 * client reads, or resets), is taken for the new connection's own: a
 * failed one closes the new connection (whose multishot recv, never
 * cancelled, keeps its socket open and goes on receiving into a slot that
 * no longer exists: its client is answered no more), a successful one
 * advances its out-queue by bytes it never sent.
 *
 * Listens on $REACTORLAB_LISTEN (host:port), else argv[1]; lifetime in
 * seconds from $LIFETIME_S, else argv[2], else 3600. Exits 0 on
 * SIGTERM/SIGINT (a signalfd read through the ring) after closing the
 * listener and every connection (io_uring_queue_exit cancels what is in
 * flight); queued echoes are not flushed.
 * Build: cc -O2 -Wall -o echo echo.c -luring (liburing 2.3, kernel >= 6.0)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <liburing.h>

#ifdef OVERFLOW_IGNORED
#include <poll.h>
#include <sys/eventfd.h>
#define QD 4                /* the CQ must have at least as many entries */
#define CQ_ENTRIES 8        /* the bug: a small CQ, its overflow never flushed */
#else
#define QD 256              /* submission queue entries */
#define CQ_ENTRIES 4096     /* multishot operations post many completions */
#endif
#define BUFFERS 16          /* provided buffer ring: 16 x 4 KiB, power of 2 */
#define BUF_SIZE 4096
#define BGID 0
#define CHUNK (64 * 1024)   /* out-queue chunk, the most one send carries */
#define HIGH (256 * 1024)   /* stop reading above this much queued output */
#define LOW (64 * 1024)     /* resume below this */
#define ACCEPT_BACKOFF_MS 100

/* user_data: a connection's address with the operation in its low bits
 * (malloc aligns to 16), or one of the loop's own operations. */
enum op { OP_RECV = 1, OP_SEND = 2, OP_CANCEL = 3 };
#define UD_ACCEPT 1ULL
#define UD_BACKOFF 2ULL
#define UD_SIGNAL 3ULL
#define UD_LIFETIME 4ULL
#define OP_MASK 7ULL

/* An out-queue chunk: bytes [off, used) are still to be sent. A send in
 * flight reads [off, off+len) of the head chunk; appending only writes
 * beyond used and a chunk never moves, so the kernel's view stays valid. */
struct chunk {
	struct chunk *next;
	size_t off, used;
	char data[CHUNK];
};

struct conn {
	int fd;            /* -1 once closed */
	int recv_armed;    /* a multishot recv is in flight */
	int send_inflight; /* a send is in flight */
	int cancels;       /* cancel operations in flight */
	int eof;           /* the client's stream has ended */
	int paused;        /* above HIGH: recv cancelled, not re-armed */
	int dirty;         /* on the dirty list */
	size_t queued;     /* bytes in the out-queue not yet sent */
	struct chunk *head, *tail;
	struct conn *next_dirty;
	struct conn *prev, *next; /* every live connection */
};

static struct io_uring ring;
static struct io_uring_buf_ring *buf_ring;
static unsigned char *bufs;
static int listen_fd = -1;
static struct conn *conns;      /* every connection not yet freed */
static struct conn *dirty_list; /* connections to update after this batch */
static struct __kernel_timespec backoff_ts = {0, ACCEPT_BACKOFF_MS * 1000000LL};
static struct __kernel_timespec lifetime_ts;
static struct signalfd_siginfo siginfo;
static unsigned long enobufs; /* recvs ended by -ENOBUFS, reported at exit */
#ifdef CLOSE_NO_CANCEL
#define MAX_FDS 65536
static struct conn *by_fd[MAX_FDS]; /* the bug's routing: a connection by its fd */
#endif

#ifdef OVERFLOW_IGNORED
static int efd = -1; /* registered with the ring: counts posted completions */

/* Publishes the queued SQEs and enters without IORING_ENTER_GETEVENTS (where
 * liburing's io_uring_submit would add it, and so flush the overflow list,
 * whenever the kernel flags an overflow). */
static int submit_only(void)
{
	struct io_uring_sq *sq = &ring.sq;
	unsigned n = sq->sqe_tail - sq->sqe_head;

	if (!n)
		return 0;
	sq->sqe_head = sq->sqe_tail;
	io_uring_smp_store_release(sq->ktail, sq->sqe_tail);
	return io_uring_enter(ring.ring_fd, n, 0, 0, NULL);
}
#endif

static struct io_uring_sqe *get_sqe(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

	if (!sqe) { /* the SQ ring is full: submit what is queued and retry */
#ifdef OVERFLOW_IGNORED
		submit_only();
#else
		io_uring_submit(&ring);
#endif
		sqe = io_uring_get_sqe(&ring);
	}
	if (!sqe) {
		fprintf(stderr, "echo: cannot get an sqe\n");
		exit(1);
	}
	return sqe;
}

#ifdef CLOSE_NO_CANCEL
static __u64 ud(struct conn *c, enum op op) { return ((__u64)c->fd << 3) | op; }

/* The connection a completion belongs to: whichever now has its fd. */
static struct conn *conn_of(__u64 u)
{
	__u64 fd = u >> 3;

	return fd < MAX_FDS ? by_fd[fd] : NULL;
}
#else
static __u64 ud(struct conn *c, enum op op) { return (__u64)(uintptr_t)c | op; }

static struct conn *conn_of(__u64 u) { return (struct conn *)(uintptr_t)(u & ~OP_MASK); }
#endif

static int setup_buffer_ring(void)
{
	struct io_uring_buf_reg reg = {0};
	int ret, i;

	/* io_uring_register_buf_ring(3): page-aligned ring memory, registered
	 * under a group ID (liburing 2.4's io_uring_setup_buf_ring does this). */
	if (posix_memalign((void **)&buf_ring, 4096, BUFFERS * sizeof(struct io_uring_buf)))
		return -ENOMEM;
	bufs = malloc(BUFFERS * BUF_SIZE);
	if (!bufs)
		return -ENOMEM;
	io_uring_buf_ring_init(buf_ring);
	reg.ring_addr = (unsigned long)buf_ring;
	reg.ring_entries = BUFFERS;
	reg.bgid = BGID;
	ret = io_uring_register_buf_ring(&ring, &reg, 0);
	if (ret)
		return ret;
	for (i = 0; i < BUFFERS; i++)
		io_uring_buf_ring_add(buf_ring, bufs + i * BUF_SIZE, BUF_SIZE, i,
				      io_uring_buf_ring_mask(BUFFERS), i);
	io_uring_buf_ring_advance(buf_ring, BUFFERS);
	return 0;
}

static void give_back(int bid)
{
	io_uring_buf_ring_add(buf_ring, bufs + bid * BUF_SIZE, BUF_SIZE, bid,
			      io_uring_buf_ring_mask(BUFFERS), 0);
	io_uring_buf_ring_advance(buf_ring, 1);
}

static void arm_accept(void)
{
	struct io_uring_sqe *sqe = get_sqe();

	io_uring_prep_multishot_accept(sqe, listen_fd, NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data64(sqe, UD_ACCEPT);
}

static void arm_recv(struct conn *c)
{
	struct io_uring_sqe *sqe = get_sqe();

	io_uring_prep_recv_multishot(sqe, c->fd, NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = BGID;
	io_uring_sqe_set_data64(sqe, ud(c, OP_RECV));
	c->recv_armed = 1;
}

static void cancel_op(struct conn *c, enum op op)
{
	struct io_uring_sqe *sqe = get_sqe();

	io_uring_prep_cancel64(sqe, ud(c, op), 0);
	io_uring_sqe_set_data64(sqe, ud(c, OP_CANCEL));
	c->cancels++;
}

static void send_head(struct conn *c)
{
	struct chunk *ch = c->head;
	struct io_uring_sqe *sqe = get_sqe();

	io_uring_prep_send(sqe, c->fd, ch->data + ch->off, ch->used - ch->off, MSG_NOSIGNAL);
	io_uring_sqe_set_data64(sqe, ud(c, OP_SEND));
	c->send_inflight = 1;
}

static void mark_dirty(struct conn *c)
{
	if (!c->dirty) {
		c->dirty = 1;
		c->next_dirty = dirty_list;
		dirty_list = c;
	}
}

/* Closes the descriptor and cancels what is in flight on it; the
 * connection is freed once the cancelled operations have completed. */
static void close_conn(struct conn *c)
{
	if (c->fd < 0)
		return;
#ifdef CLOSE_NO_CANCEL
	/* the bug: nothing cancelled; the operations in flight are forgotten
	 * and the slot freed, their completions to be routed by fd */
	by_fd[c->fd] = NULL;
	c->recv_armed = c->send_inflight = 0;
#else
	if (c->recv_armed)
		cancel_op(c, OP_RECV);
	if (c->send_inflight)
		cancel_op(c, OP_SEND);
#endif
	close(c->fd);
	c->fd = -1;
	mark_dirty(c);
}

static int append(struct conn *c, const unsigned char *p, size_t n)
{
	while (n > 0) {
		struct chunk *t = c->tail;
		size_t room;

		if (!t || t->used == CHUNK) {
			t = malloc(sizeof(*t));
			if (!t)
				return -1;
			t->next = NULL;
			t->off = t->used = 0;
			if (c->tail)
				c->tail->next = t;
			else
				c->head = t;
			c->tail = t;
		}
		room = CHUNK - t->used;
		if (room > n)
			room = n;
		memcpy(t->data + t->used, p, room);
		t->used += room;
		c->queued += room;
		p += room;
		n -= room;
	}
	return 0;
}

static void free_conn(struct conn *c)
{
	while (c->head) {
		struct chunk *n = c->head->next;

		free(c->head);
		c->head = n;
	}
	if (c->prev)
		c->prev->next = c->next;
	else
		conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c);
}

static void handle_accept(struct io_uring_cqe *cqe)
{
	struct conn *c;

	if (cqe->res < 0) {
		if (!(cqe->flags & IORING_CQE_F_MORE)) {
			if (cqe->res == -EMFILE || cqe->res == -ENFILE ||
			    cqe->res == -ENOBUFS || cqe->res == -ENOMEM) {
				struct io_uring_sqe *sqe = get_sqe();

				io_uring_prep_timeout(sqe, &backoff_ts, 0, 0);
				io_uring_sqe_set_data64(sqe, UD_BACKOFF);
			} else {
				arm_accept();
			}
		}
		return;
	}
	if (!(cqe->flags & IORING_CQE_F_MORE))
		arm_accept();
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(cqe->res);
		return;
	}
	c->fd = cqe->res;
#ifdef CLOSE_NO_CANCEL
	if (c->fd >= MAX_FDS) {
		close(c->fd);
		free(c);
		return;
	}
	by_fd[c->fd] = c;
#endif
	c->next = conns;
	if (conns)
		conns->prev = c;
	conns = c;
	arm_recv(c);
}

static void handle_recv(struct conn *c, struct io_uring_cqe *cqe)
{
	if (cqe->flags & IORING_CQE_F_BUFFER) {
		int bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;

		if (cqe->res > 0 && c->fd >= 0 && append(c, bufs + bid * BUF_SIZE, cqe->res) < 0)
			close_conn(c);
		give_back(bid);
	}
	if (!(cqe->flags & IORING_CQE_F_MORE))
		c->recv_armed = 0;
	mark_dirty(c);
	if (c->fd < 0)
		return;
	if (cqe->res == 0) {
		c->eof = 1;
#ifdef CLOSE_NO_CANCEL
		close_conn(c); /* the bug: closed at once, the send in flight left to the kernel */
#endif
	} else if (cqe->res == -ENOBUFS) {
		enobufs++;
#ifdef ENOBUFS_AS_EOF
		c->eof = 1; /* the bug: no buffer free taken as the end of the stream */
#endif
		/* the recv is re-armed after this batch, every buffer given back */
	} else if (cqe->res < 0 && cqe->res != -ECANCELED) {
		close_conn(c);
	} else if (c->queued > HIGH && !c->paused) {
		c->paused = 1;
		if (c->recv_armed)
			cancel_op(c, OP_RECV);
	}
}

static void handle_send(struct conn *c, struct io_uring_cqe *cqe)
{
	c->send_inflight = 0;
	mark_dirty(c);
	if (c->fd < 0)
		return;
	if (cqe->res < 0) {
		close_conn(c);
		return;
	}
	c->head->off += cqe->res; /* a partial send: the rest goes next */
	c->queued -= cqe->res;
	if (c->head->off == c->head->used) {
		if (c->head == c->tail) {
			c->head->off = c->head->used = 0;
		} else {
			struct chunk *n = c->head->next;

			free(c->head);
			c->head = n;
		}
	}
	if (c->paused && c->queued < LOW)
		c->paused = 0;
}

/* Brings a connection up to date once the batch's completions are in: the
 * ring's buffers are all given back by then, so a recv ended by -ENOBUFS
 * can be re-armed. */
static void update(struct conn *c)
{
	c->dirty = 0;
	if (c->fd >= 0) {
		if (!c->recv_armed && !c->cancels && !c->eof && !c->paused)
			arm_recv(c);
		if (!c->send_inflight && c->queued > 0)
			send_head(c);
		if (c->eof && c->queued == 0 && !c->send_inflight)
			close_conn(c);
	}
	/* closing above puts it back on the dirty list: freed when taken off */
	if (c->fd < 0 && !c->dirty && !c->recv_armed && !c->send_inflight && !c->cancels)
		free_conn(c);
}

#ifdef OVERFLOW_IGNORED
/* The bug: if the CQ ring is empty, sleeps in poll(2) on the eventfd (and
 * the signalfd, which it reads itself: *stop is set at SIGTERM or SIGINT).
 * It never looks at IORING_SQ_CQ_OVERFLOW, so completions kept in the
 * kernel's overflow list are never flushed into the ring. */
static int submit_then_wait_eventfd(int sfd, int *stop)
{
	struct pollfd pfd[2] = {{.fd = efd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
	uint64_t v;
	int ret = submit_only();

	if (ret < 0)
		return ret;
	if (io_uring_cq_ready(&ring))
		return 0;
	if (poll(pfd, 2, -1) < 0)
		return -errno;
	if (pfd[1].revents & POLLIN)
		*stop = 1;
	if ((pfd[0].revents & POLLIN) && read(efd, &v, sizeof(v)) < 0)
		return -errno;
	return 0;
}

#endif
static int parse_addr(const char *addr, struct sockaddr_storage *ss, socklen_t *len)
{
	const char *colon = strrchr(addr, ':');
	char host[256];
	int port;

	if (!colon || colon - addr >= (int)sizeof(host))
		return -1;
	port = atoi(colon + 1);
	memset(ss, 0, sizeof(*ss));
	if (addr[0] == '[') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		snprintf(host, sizeof(host), "%.*s", (int)(colon - addr - 2), addr + 1);
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		*len = sizeof(*s6);
		return inet_pton(AF_INET6, host, &s6->sin6_addr) == 1 ? 0 : -1;
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		*len = sizeof(*s4);
		return inet_pton(AF_INET, host, &s4->sin_addr) == 1 ? 0 : -1;
	}
}

int main(int argc, char **argv)
{
	const char *addr = getenv("REACTORLAB_LISTEN");
	const char *life = getenv("LIFETIME_S");
	struct io_uring_params params;
	struct sockaddr_storage ss;
	struct io_uring_sqe *sqe;
	socklen_t sslen;
	sigset_t mask;
	long lifetime = 3600;
	int one = 1, sfd, ret, running = 1;

	if (!addr || !*addr)
		addr = argc > 1 ? argv[1] : "127.0.0.1:7070";
	if (!life || !*life)
		life = argc > 2 ? argv[2] : NULL;
	if (life)
		lifetime = atol(life);
	if (parse_addr(addr, &ss, &sslen) < 0) {
		fprintf(stderr, "echo: cannot parse address %s\n", addr);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN); /* sends carry MSG_NOSIGNAL; a close may not */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	listen_fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sfd < 0 || listen_fd < 0 ||
	    setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(listen_fd, (struct sockaddr *)&ss, sslen) < 0 || listen(listen_fd, SOMAXCONN) < 0) {
		fprintf(stderr, "echo: cannot listen on %s: %s\n", addr, strerror(errno));
		return 1;
	}

	/* echo-server.c's ring: DEFER_TASKRUN (completions run when the one
	 * issuer waits), falling back to COOP_TASKRUN before 6.1. */
	memset(&params, 0, sizeof(params));
	params.cq_entries = CQ_ENTRIES;
#ifdef OVERFLOW_IGNORED
	/* completions must be posted while the loop sleeps in read(2) on the
	 * eventfd: no DEFER_TASKRUN, which posts them only when it enters */
	params.flags = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_CQSIZE;
#else
	params.flags = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_CQSIZE |
		       IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
#endif
	ret = io_uring_queue_init_params(QD, &ring, &params);
	if (ret == -EINVAL) {
		params.flags = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_CQSIZE | IORING_SETUP_COOP_TASKRUN;
		ret = io_uring_queue_init_params(QD, &ring, &params);
	}
	if (ret < 0) {
		fprintf(stderr, "echo: io_uring_queue_init: %s\n", strerror(-ret));
		return 1;
	}
	if ((ret = setup_buffer_ring()) < 0) {
		fprintf(stderr, "echo: provided buffer ring: %s\n", strerror(-ret));
		return 1;
	}
#ifdef OVERFLOW_IGNORED
	efd = eventfd(0, EFD_CLOEXEC);
	if (efd < 0 || (ret = io_uring_register_eventfd(&ring, efd)) < 0) {
		fprintf(stderr, "echo: eventfd: %s\n", efd < 0 ? strerror(errno) : strerror(-ret));
		return 1;
	}
#endif

	arm_accept();
	sqe = get_sqe();
	io_uring_prep_read(sqe, sfd, &siginfo, sizeof(siginfo), 0);
	io_uring_sqe_set_data64(sqe, UD_SIGNAL);
	lifetime_ts.tv_sec = lifetime;
	sqe = get_sqe();
	io_uring_prep_timeout(sqe, &lifetime_ts, 0, 0);
	io_uring_sqe_set_data64(sqe, UD_LIFETIME);
	fprintf(stderr, "echo: listening on %s (io_uring, %d provided buffers of %d B)\n",
		addr, BUFFERS, BUF_SIZE);

	while (running) {
		struct io_uring_cqe *cqe;
		unsigned head, count = 0;

#ifdef OVERFLOW_IGNORED
		int stop = 0;

		ret = submit_then_wait_eventfd(sfd, &stop);
		if (stop)
			break;
#else
		ret = io_uring_submit_and_wait(&ring, 1);
#endif
		if (ret == -EINTR)
			continue;
		if (ret < 0) {
			fprintf(stderr, "echo: io_uring_submit_and_wait: %s\n", strerror(-ret));
			return 1;
		}
		io_uring_for_each_cqe(&ring, head, cqe) {
			__u64 u = cqe->user_data;
			struct conn *c = conn_of(u);

			count++;
			switch (u) {
			case UD_ACCEPT:
				handle_accept(cqe);
				continue;
			case UD_BACKOFF:
				arm_accept();
				continue;
			case UD_SIGNAL:
			case UD_LIFETIME:
				running = 0;
				continue;
			}
			if (!c) { /* CLOSE_NO_CANCEL: a result for a freed slot */
				if (cqe->flags & IORING_CQE_F_BUFFER)
					give_back(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
				continue;
			}
			switch (u & OP_MASK) {
			case OP_RECV:
				handle_recv(c, cqe);
				break;
			case OP_SEND:
				handle_send(c, cqe);
				break;
			case OP_CANCEL:
				c->cancels--;
				mark_dirty(c);
				break;
			}
		}
		io_uring_cq_advance(&ring, count);
		while (dirty_list) {
			struct conn *c = dirty_list;

			dirty_list = c->next_dirty;
			update(c);
		}
	}

	fprintf(stderr, "echo: stopping; %lu recvs ended by -ENOBUFS\n", enobufs);
	close(listen_fd);
	for (struct conn *c = conns; c; c = c->next)
		if (c->fd >= 0)
			close(c->fd);
	io_uring_queue_exit(&ring);
	return 0;
}
