/*
 * Byte echo on libevent 2.1: an evconnlistener accepts, each connection is a
 * socket bufferevent whose read callback moves its input to its output
 * (evbuffer_add_buffer), as the echo server of the libevent book does
 * ("Connection listeners", http://www.wangafu.net/~nickm/libevent-book/Ref8_listener.html),
 * with the three things the book's example leaves out:
 *
 * 1. Backpressure. A bufferevent reads whenever the socket is readable; it
 *    never stops because its *output* is long. So the read callback disables
 *    EV_READ once the output holds more than HIGH bytes, and the write
 *    callback, which libevent runs when the output has drained to its write
 *    low watermark (bufferevent_setwatermark(EV_WRITE, LOW, 0), bufferevent.h),
 *    enables it again (the scheme of libevent's sample/le-proxy.c: readcb
 *    disables EV_READ at MAX_OUTPUT, drained_writecb re-enables it).
 * 2. Half-close. At BEV_EVENT_EOF the output may still hold echoes, and
 *    bufferevent_free() drops them ("If there is pending data to write on the
 *    bufferevent, it probably won't be flushed", bufferevent.h). So at EOF
 *    with output pending the connection stops reading (bufferevent_readcb
 *    already disabled EV_READ) and is freed by the write callback once the
 *    output is empty (write low watermark set to 0), as le-proxy.c's
 *    close_on_finished_writecb does.
 * 3. EMFILE. listener.c's listener_read_cb passes a non-retriable accept()
 *    error (EMFILE, ENFILE, ...) to the listener's error callback, and the
 *    listener's event stays added (EV_READ|EV_PERSIST, level-triggered): the
 *    pending connection keeps the socket readable. So the error callback
 *    disables the listener and a timer enables it again 100 ms later.
 *
 * Listens on $REACTORLAB_LISTEN (host:port), else argv[1]; lifetime in
 * seconds from $LIFETIME_S, else argv[2], else 3600. Exits 0 on
 * SIGTERM/SIGINT after closing the listener and every connection.
 * Build: cc -O2 -Wall -o echo echo.c -levent
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
	int eof; /* the client has shut down its side; free once flushed */
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
	struct conn *c = ctx;

	if (c->eof) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			close_conn(c); /* everything delivered: FIN */
		return;
	}
	bufferevent_enable(bev, EV_READ); /* output down to LOW */
}

static void echo_event_cb(struct bufferevent *bev, short events, void *ctx)
{
	struct conn *c = ctx;

	if ((events & BEV_EVENT_EOF) && !(events & BEV_EVENT_ERROR) &&
	    evbuffer_get_length(bufferevent_get_output(bev)) > 0) {
		/* Half-closed with echoes queued: deliver them, then close. */
		c->eof = 1;
		bufferevent_disable(bev, EV_READ);
		bufferevent_setwatermark(bev, EV_WRITE, 0, 0);
		return;
	}
	if (events & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		close_conn(c);
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
	fprintf(stderr, "echo: accept: %s\n", evutil_socket_error_to_string(err));
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
		fprintf(stderr, "echo: cannot parse address %s\n", addr);
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
		fprintf(stderr, "echo: cannot listen on %s: %s\n", addr, strerror(errno));
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
	fprintf(stderr, "echo: listening on %s (libevent %s, %s)\n", addr,
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
