/*
 * Byte echo on plain Java NIO (java.nio.channels, JDK 17): one thread, one
 * Selector (on Linux sun.nio.ch.EPollSelectorImpl: one epoll instance,
 * level-triggered), non-blocking channels, the loop of the Selector and
 * SelectionKey docs, with what a robust echo needs besides:
 *
 * 1. Writes that come back short. SocketChannel.write "may not write all"
 *    of a non-blocking channel's bytes, "possibly none at all" (its javadoc),
 *    and returns how many it wrote. An echo is written at once from the read
 *    buffer; what the kernel does not take is kept in the connection's own
 *    output buffer, written when the key says OP_WRITE, in order. OP_WRITE is
 *    in the key's interest set only while that buffer holds something (a
 *    socket is almost always writable: interest in OP_WRITE with nothing to
 *    write wakes the loop for nothing, forever).
 * 2. Backpressure. Once the output buffer holds HIGH bytes, OP_READ is taken
 *    out of the interest set, so the kernel's receive queue fills and the
 *    client's writes block; it is put back when the buffer is down to LOW.
 * 3. Half-close. read returns -1 at the client's FIN. What is owed is
 *    written first (OP_WRITE), then the channel is closed (a FIN: nothing is
 *    left unread). An IOException on a read or a write (a reset, EPIPE)
 *    closes the channel at once.
 * 4. EMFILE. ServerSocketChannel.accept throws IOException ("Too many open
 *    files") and leaves the connection queued, so the listener stays
 *    readable: with OP_ACCEPT still wanted a level-triggered selector would
 *    return at once, forever. So the loop takes OP_ACCEPT out for 100 ms.
 *    And the JDK makes a descriptor of its own the first time a socket is
 *    written or closed: sun.nio.ch.FileDispatcherImpl's static initializer
 *    opens the socketpair its preClose dup2s over a closing descriptor
 *    (FileDispatcherImpl.c, _init). At EMFILE that fails with an
 *    ExceptionInInitializerError, which ends the loop, and every later write
 *    or close fails with NoClassDefFoundError. So the server has it made at
 *    start, while descriptors are free: a FileChannel uses the same
 *    dispatcher.
 *
 * Listens on $REACTORLAB_LISTEN (host:port), else args[0], else
 * 127.0.0.1:7070; exits by itself after $LIFETIME_S (else args[1], else
 * 3600) seconds. SIGTERM is the JVM's: shutdown hooks (none) and exit 143.
 *
 * NioDropShortWrite.java is this server with write's return value ignored.
 */
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.Iterator;

public class NioEcho {
    static final int READ_SIZE = 64 * 1024; // at most one read of this per ready connection per select
    static final int HIGH = 256 * 1024;     // stop reading a connection that owes this much
    static final int LOW = 64 * 1024;       // read it again once it owes no more than this
    static final int BACKLOG = 1024;        // ServerSocketChannel.bind's default is 50
    static final long ACCEPT_BACKOFF_MS = 100;

    /** One connection: what it is owed that the kernel did not take yet. */
    static final class Conn {
        final SocketChannel ch;
        ByteBuffer out;  // null while nothing is owed; in write mode (position = bytes held)
        boolean eof;     // the client's FIN was read: close once out is empty

        Conn(SocketChannel ch) { this.ch = ch; }

        int owed() { return out == null ? 0 : out.position(); }

        /** Appends what is left of src to the output buffer. */
        void hold(ByteBuffer src) {
            if (out == null) {
                out = ByteBuffer.allocate(Math.max(src.remaining(), READ_SIZE));
            } else if (out.remaining() < src.remaining()) {
                ByteBuffer bigger = ByteBuffer.allocate(Math.max(out.capacity() * 2, out.position() + src.remaining()));
                out.flip();
                bigger.put(out);
                out = bigger;
            }
            out.put(src);
        }
    }

    final ByteBuffer readBuf = ByteBuffer.allocateDirect(READ_SIZE);
    Selector selector;
    ServerSocketChannel server;
    SelectionKey serverKey;
    long acceptResumeAt; // nanoTime when OP_ACCEPT is wanted again; 0: not backing off

    /**
     * Writes as much of c's output buffer as the kernel takes and keeps the
     * rest (the buffer is compacted: the rest moves to its start).
     */
    protected void flush(Conn c) throws IOException {
        c.out.flip();
        c.ch.write(c.out);
        c.out.compact();
    }

    /**
     * Writes the echo in buf (read mode) now if nothing is owed before it;
     * whatever the kernel does not take is held.
     */
    protected void echo(Conn c, ByteBuffer buf) throws IOException {
        if (c.owed() == 0) {
            c.ch.write(buf);
        }
        if (buf.hasRemaining()) {
            c.hold(buf);
        }
    }

    void serve(String[] args) throws IOException {
        String listen = System.getenv("REACTORLAB_LISTEN");
        if (listen == null || listen.isEmpty()) {
            listen = args.length > 0 ? args[0] : "127.0.0.1:7070";
        }
        String life = System.getenv("LIFETIME_S");
        if (life == null || life.isEmpty()) {
            life = args.length > 1 ? args[1] : "3600";
        }
        long deadline = System.nanoTime() + (long) (Double.parseDouble(life) * 1e9);
        int colon = listen.lastIndexOf(':');
        String host = listen.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        int port = Integer.parseInt(listen.substring(colon + 1));

        FileChannel.open(Path.of("/dev/null")).close(); // FileDispatcherImpl's socketpair, now
        selector = Selector.open();
        server = ServerSocketChannel.open();
        server.setOption(StandardSocketOptions.SO_REUSEADDR, true);
        server.bind(new InetSocketAddress(host, port), BACKLOG);
        server.configureBlocking(false);
        serverKey = server.register(selector, SelectionKey.OP_ACCEPT);
        System.err.println(getClass().getSimpleName() + ": listening on " + server.getLocalAddress());

        for (;;) {
            long now = System.nanoTime();
            if (now - deadline >= 0) {
                System.exit(0);
            }
            long wake = deadline;
            if (acceptResumeAt != 0) {
                if (now - acceptResumeAt >= 0) {
                    acceptResumeAt = 0;
                    serverKey.interestOps(SelectionKey.OP_ACCEPT);
                } else if (acceptResumeAt - deadline < 0) {
                    wake = acceptResumeAt;
                }
            }
            selector.select(Math.max(1, (wake - now + 999_999) / 1_000_000));
            Iterator<SelectionKey> it = selector.selectedKeys().iterator();
            while (it.hasNext()) {
                SelectionKey k = it.next();
                it.remove();
                if (k == serverKey) {
                    accept();
                } else {
                    serve(k);
                }
            }
        }
    }

    /** Accepts every queued connection; at an error (EMFILE) backs off. */
    void accept() {
        for (;;) {
            SocketChannel ch;
            try {
                ch = server.accept();
            } catch (IOException e) {
                // EMFILE, ENFILE, ENOBUFS...: the connection stays queued and
                // the listener readable. Stop asking for OP_ACCEPT a while.
                System.err.println(getClass().getSimpleName() + ": accept: " + e.getMessage() + ": pausing accepts " + ACCEPT_BACKOFF_MS + " ms");
                serverKey.interestOps(0);
                acceptResumeAt = System.nanoTime() + ACCEPT_BACKOFF_MS * 1_000_000;
                return;
            }
            if (ch == null) {
                return; // nothing more queued
            }
            try {
                ch.configureBlocking(false);
                ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
                ch.register(selector, SelectionKey.OP_READ, new Conn(ch));
            } catch (IOException e) {
                close(ch);
            }
        }
    }

    /** Serves one ready connection: one write of what it is owed, one read. */
    void serve(SelectionKey k) {
        Conn c = (Conn) k.attachment();
        try {
            if (k.isValid() && k.isWritable() && c.owed() > 0) {
                flush(c);
            }
            if (k.isValid() && k.isReadable() && !c.eof && c.owed() < HIGH) {
                readBuf.clear();
                int n = c.ch.read(readBuf);
                if (n < 0) {
                    c.eof = true;
                } else if (n > 0) {
                    readBuf.flip();
                    echo(c, readBuf);
                }
            }
            int owed = c.owed();
            if (owed == 0) {
                c.out = null; // an idle connection holds no buffer
                if (c.eof) {
                    close(c.ch); // everything owed was written: FIN
                    return;
                }
            }
            int ops = 0;
            if (owed > 0) {
                ops |= SelectionKey.OP_WRITE;
            }
            if (!c.eof && (owed <= LOW || (owed < HIGH && (k.interestOps() & SelectionKey.OP_READ) != 0))) {
                ops |= SelectionKey.OP_READ;
            }
            if (ops != k.interestOps()) {
                k.interestOps(ops);
            }
        } catch (IOException e) {
            close(c.ch); // a reset, EPIPE: nothing more can be delivered
        }
    }

    static void close(SocketChannel ch) {
        try {
            ch.close();
        } catch (IOException ignored) {
        }
    }

    public static void main(String[] args) throws IOException {
        new NioEcho().serve(args);
    }
}
