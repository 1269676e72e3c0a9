/*
 * Byte echo on libuv, in the idiom of the libuv guide's TCP echo server
 * (https://docs.libuv.org/en/v1.x/guide/networking.html, uvbook tcp-echo-server:
 * uv_listen, uv_accept, uv_read_start, and in the read callback uv_write of
 * the buffer just read), with what the guide's example leaves out:
 *
 * - Backpressure. uv_write() never refuses data: what the socket does not
 *   take at once is queued in user space (uv_stream_get_write_queue_size,
 *   https://docs.libuv.org/en/v1.x/stream.html). So the read callback stops
 *   reading (uv_read_stop) once more than HIGH bytes are queued, and the
 *   write callback starts it again (uv_read_start) when the queue is below
 *   LOW.
 * - Half-close. On UV_EOF (libuv has stopped reading) uv_shutdown(), which
 *   waits for every queued write, then sends the FIN; the shutdown callback
 *   closes the handle.
 * - Errors. A read error, or a write callback with status < 0 (ECONNRESET,
 *   EPIPE: "status will be 0 in case of success, < 0 otherwise",
 *   uv_write_cb), closes the handle (uv_close cancels the writes still
 *   queued: their callbacks run with UV_ECANCELED before the close callback).
 *   The write callback is the only thing that reports a reset on a
 *   connection whose reads are paused.
 * - EMFILE: libuv handles it (uv__emfile_trick in src/unix/stream.c: a
 *   reserved descriptor is closed, the pending connections are accepted and
 *   closed, the descriptor is reopened), so the listener does not spin.
 *
 * Listens on $REACTORLAB_LISTEN (host:port), else argv[1]; lifetime in
 * seconds from $LIFETIME_S, else argv[2], else 3600. Exits 0 on
 * SIGTERM/SIGINT after closing the listener and every connection.
 * Build: cc -O2 -Wall -o echo echo.c -luv
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#define HIGH (256 * 1024) /* stop reading above this much queued output */
#define LOW (64 * 1024)   /* resume below this */

struct conn {
	uv_tcp_t tcp;
	int paused;
};

struct write_req {
	uv_write_t req;
	uv_buf_t buf;
};

static uv_loop_t *loop;
static uv_tcp_t server;

static void on_close(uv_handle_t *handle)
{
	if (handle != (uv_handle_t *)&server && handle->type == UV_TCP)
		free(handle->data);
}

static void close_conn(uv_stream_t *stream)
{
	if (!uv_is_closing((uv_handle_t *)stream))
		uv_close((uv_handle_t *)stream, on_close);
}

static void alloc_buffer(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
	buf->base = malloc(suggested);
	buf->len = buf->base ? suggested : 0;
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

static void on_write(uv_write_t *req, int status)
{
	struct write_req *wr = (struct write_req *)req;
	uv_stream_t *stream = req->handle;
	struct conn *c = stream->data;

	free(wr->buf.base);
	free(wr);
	if (status < 0) { /* reset, broken pipe, or cancelled by uv_close */
		close_conn(stream);
		return;
	}
	if (c->paused && uv_stream_get_write_queue_size(stream) < LOW) {
		c->paused = 0;
		uv_read_start(stream, alloc_buffer, on_read);
	}
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	close_conn(req->handle);
	free(req);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = stream->data;

	if (nread > 0) {
		struct write_req *wr = malloc(sizeof(*wr));

		if (!wr) {
			free(buf->base);
			close_conn(stream);
			return;
		}
		wr->buf = uv_buf_init(buf->base, nread);
		if (uv_write(&wr->req, stream, &wr->buf, 1, on_write) < 0) {
			free(wr->buf.base);
			free(wr);
			close_conn(stream);
			return;
		}
		if (uv_stream_get_write_queue_size(stream) > HIGH) {
			uv_read_stop(stream); /* backpressure */
			c->paused = 1;
		}
		return;
	}
	free(buf->base);
	if (nread == UV_EOF) {
		uv_shutdown_t *req = malloc(sizeof(*req));

		if (!req || uv_shutdown(req, stream, on_shutdown) < 0) {
			free(req);
			close_conn(stream);
		}
	} else if (nread < 0) {
		close_conn(stream);
	}
}

static void on_new_connection(uv_stream_t *listener, int status)
{
	struct conn *c;

	if (status < 0) {
		fprintf(stderr, "echo: new connection: %s\n", uv_strerror(status));
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return;
	uv_tcp_init(loop, &c->tcp);
	c->tcp.data = c;
	if (uv_accept(listener, (uv_stream_t *)&c->tcp) == 0)
		uv_read_start((uv_stream_t *)&c->tcp, alloc_buffer, on_read);
	else
		close_conn((uv_stream_t *)&c->tcp);
}

static void close_walk(uv_handle_t *handle, void *arg)
{
	if (!uv_is_closing(handle))
		uv_close(handle, on_close);
}

static void stop(void)
{
	uv_walk(loop, close_walk, NULL); /* the loop ends once all are closed */
}

static void on_signal(uv_signal_t *handle, int signum) { stop(); }
static void on_deadline(uv_timer_t *handle) { stop(); }

int main(int argc, char **argv)
{
	const char *addr = getenv("REACTORLAB_LISTEN");
	const char *life = getenv("LIFETIME_S");
	char host[256];
	const char *colon;
	struct sockaddr_storage ss;
	uv_signal_t sigterm, sigint;
	uv_timer_t deadline;
	long lifetime = 3600;
	int port, err;

	if (!addr || !*addr)
		addr = argc > 1 ? argv[1] : "127.0.0.1:7070";
	if (!life || !*life)
		life = argc > 2 ? argv[2] : NULL;
	if (life)
		lifetime = atol(life);
	colon = strrchr(addr, ':');
	if (!colon || colon - addr >= (int)sizeof(host)) {
		fprintf(stderr, "echo: cannot parse address %s\n", addr);
		return 2;
	}
	port = atoi(colon + 1);
	if (addr[0] == '[') { /* [v6]:port */
		snprintf(host, sizeof(host), "%.*s", (int)(colon - addr - 2), addr + 1);
		err = uv_ip6_addr(host, port, (struct sockaddr_in6 *)&ss);
	} else {
		snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
		err = uv_ip4_addr(host, port, (struct sockaddr_in *)&ss);
	}
	if (err) {
		fprintf(stderr, "echo: cannot parse address %s: %s\n", addr, uv_strerror(err));
		return 2;
	}

	/* libuv writes with write(2), not send(MSG_NOSIGNAL): without this a
	 * write to a reset connection kills the process with SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	loop = uv_default_loop();
	uv_tcp_init(loop, &server);
	if ((err = uv_tcp_bind(&server, (const struct sockaddr *)&ss, 0)) ||
	    (err = uv_listen((uv_stream_t *)&server, 128, on_new_connection))) {
		fprintf(stderr, "echo: cannot listen on %s: %s\n", addr, uv_strerror(err));
		return 1;
	}
	uv_signal_init(loop, &sigterm);
	uv_signal_start(&sigterm, on_signal, SIGTERM);
	uv_signal_init(loop, &sigint);
	uv_signal_start(&sigint, on_signal, SIGINT);
	uv_timer_init(loop, &deadline);
	uv_timer_start(&deadline, on_deadline, (uint64_t)lifetime * 1000, 0);
	fprintf(stderr, "echo: listening on %s (libuv %s)\n", addr, uv_version_string());

	uv_run(loop, UV_RUN_DEFAULT);
	uv_loop_close(loop);
	return 0;
}
