/*
 * NioEcho with the bug the NIO tutorials' echo loops carry:
 *
 *     buf.flip();
 *     ch.write(buf);   // the count written, ignored
 *     buf.clear();
 *
 * On a non-blocking channel SocketChannel.write "may not write all" of the
 * buffer, "possibly none at all" (its javadoc), and returns how many bytes
 * it wrote; here what the kernel did not take is dropped. Everything else is
 * NioEcho's (one Selector thread, OP_WRITE only while output is held,
 * watermarks, flush then close at EOF, EMFILE back-off): only the two
 * writes differ, and since nothing is ever held, the output buffer, the
 * watermarks and OP_WRITE never come into play.
 */
import java.io.IOException;
import java.nio.ByteBuffer;

public final class NioDropShortWrite extends NioEcho {
    @Override
    protected void flush(Conn c) throws IOException {
        c.out.flip();
        c.ch.write(c.out);
        c.out.clear();
    }

    @Override
    protected void echo(Conn c, ByteBuffer buf) throws IOException {
        c.ch.write(buf); // what it did not take is dropped
        buf.clear();
    }

    public static void main(String[] args) throws IOException {
        new NioDropShortWrite().serve(args);
    }
}
