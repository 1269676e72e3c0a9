/*
 * BUGGY byte echo on libevent 2.1: echo.c (backpressure, EMFILE handling and
 * all) with the event callback of the libevent book's echo server
 * ("Connection listeners", http://www.wangafu.net/~nickm/libevent-book/Ref8_listener.html):
 *
 *     if (events & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
 *             bufferevent_free(bev);
 *
 * At BEV_EVENT_EOF the client has only shut down its side; echoes still in
 * the bufferevent's output are thrown away by bufferevent_free() ("If there
 * is pending data to write on the bufferevent, it probably won't be
 * flushed before the bufferevent is freed", bufferevent.h: it is not
 * flushed at all, bufferevent_sock.c frees the evbuffers and closes the
 * socket). A half-closed client loses the tail of its echoes: fails I3 (and
 * today's I2, whose half-closed connections must get every echo, then EOF).
 * This is the only difference from echo.c.
 *
 * Listens on $REACTORLAB_LISTEN (host:port), else argv[1]; lifetime in
 * seconds from $LIFETIME_S, else argv[2], else 3600. Exits 0 on
 * SIGTERM/SIGINT after closing the listener and every connection.
 * Build: cc -O2 -Wall -o free-at-eof free-at-eof.c -levent
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#define HIGH (256 * 1024) /* stop reading above this much queued output */
#define LOW (64 * 1024)   /* resume once the output is down to this */

struct conn {
	struct bufferevent *bev;
	struct conn *prev, *next;
};

static struct event_base *base;
static struct evconnlistener *listener;
static struct event *retry; /* re-enables the listener after EMFILE */
static struct conn *conns;  /* every open connection, for shutdown */

static void close_conn(struct conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	bufferevent_free(c->bev); /* BEV_OPT_CLOSE_ON_FREE: closes the socket */
	free(c);
}

static void echo_read_cb(struct bufferevent *bev, void *ctx)
{
	struct evbuffer *output = bufferevent_get_output(bev);

	evbuffer_add_buffer(output, bufferevent_get_input(bev));
	if (evbuffer_get_length(output) > HIGH)
		bufferevent_disable(bev, EV_READ); /* backpressure */
}

static void echo_write_cb(struct bufferevent *bev, void *ctx)
{
	bufferevent_enable(bev, EV_READ); /* output down to LOW */
}

static void echo_event_cb(struct bufferevent *bev, short events, void *ctx)
{
	struct conn *c = ctx;

	if (events & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		close_conn(c); /* BUG: at EOF the output may hold echoes */
}

static void accept_conn_cb(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *address, int socklen, void *ctx)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (c)
		c->bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!c || !c->bev) {
		free(c);
		evutil_closesocket(fd);
		return;
	}
	c->next = conns;
	if (conns)
		conns->prev = c;
	conns = c;
	bufferevent_setcb(c->bev, echo_read_cb, echo_write_cb, echo_event_cb, c);
	bufferevent_setwatermark(c->bev, EV_WRITE, LOW, 0);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

static void accept_error_cb(struct evconnlistener *l, void *ctx)
{
	int err = EVUTIL_SOCKET_ERROR();
	struct timeval later = {0, 100 * 1000};

	if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
		/* Out of descriptors: the pending connection stays in the
		 * backlog and keeps the listener readable. Stop listening
		 * for 100 ms instead of spinning on it. */
		evconnlistener_disable(l);
		evtimer_add(retry, &later);
		return;
	}
	fprintf(stderr, "free-at-eof: accept: %s\n", evutil_socket_error_to_string(err));
}

static void retry_cb(evutil_socket_t fd, short what, void *ctx)
{
	evconnlistener_enable(listener);
}

static void stop_cb(evutil_socket_t fd, short what, void *ctx)
{
	event_base_loopbreak(base);
}

int main(int argc, char **argv)
{
	const char *addr = getenv("REACTORLAB_LISTEN");
	const char *life = getenv("LIFETIME_S");
	struct sockaddr_storage ss;
	int sslen = sizeof(ss);
	struct timeval lifetime = {3600, 0};
	struct event *sigterm, *sigint, *deadline;

	if (!addr || !*addr)
		addr = argc > 1 ? argv[1] : "127.0.0.1:7070";
	if (!life || !*life)
		life = argc > 2 ? argv[2] : NULL;
	if (life)
		lifetime.tv_sec = atol(life);
	if (evutil_parse_sockaddr_port(addr, (struct sockaddr *)&ss, &sslen) < 0) {
		fprintf(stderr, "free-at-eof: cannot parse address %s\n", addr);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	base = event_base_new();
	if (!base)
		return 1;
	listener = evconnlistener_new_bind(base, accept_conn_cb, NULL,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, -1,
	    (struct sockaddr *)&ss, sslen);
	if (!listener) {
		fprintf(stderr, "free-at-eof: cannot listen on %s: %s\n", addr, strerror(errno));
		return 1;
	}
	evconnlistener_set_error_cb(listener, accept_error_cb);
	retry = evtimer_new(base, retry_cb, NULL);
	sigterm = evsignal_new(base, SIGTERM, stop_cb, NULL);
	sigint = evsignal_new(base, SIGINT, stop_cb, NULL);
	deadline = evtimer_new(base, stop_cb, NULL);
	event_add(sigterm, NULL);
	event_add(sigint, NULL);
	event_add(deadline, &lifetime);
	fprintf(stderr, "free-at-eof: listening on %s (libevent %s, %s)\n", addr,
	    event_get_version(), event_base_get_method(base));

	event_base_dispatch(base);

	evconnlistener_free(listener);
	while (conns)
		close_conn(conns);
	event_free(retry);
	event_free(sigterm);
	event_free(sigint);
	event_free(deadline);
	event_base_free(base);
	return 0;
}
