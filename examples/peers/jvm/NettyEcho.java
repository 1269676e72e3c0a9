/*
 * Byte echo on Netty 4.1 (NIO transport): Netty's own example, EchoServer
 * and EchoServerHandler of io.netty.example.echo (ctx.write(msg) in
 * channelRead, ctx.flush() in channelReadComplete, a boss group of one loop
 * and a worker group, SO_BACKLOG 100), without its optional SSL and
 * LoggingHandler, and with what the example leaves out:
 *
 * 1. Backpressure. ctx.write never refuses: it queues in the channel's
 *    ChannelOutboundBuffer, and a channel whose client does not read holds
 *    all it reads. The outbound buffer's water marks (WriteBufferWaterMark,
 *    32 KiB low, 64 KiB high by default) turn Channel.isWritable() off and
 *    on and fire channelWritabilityChanged; the handler turns auto-read off
 *    while the channel is not writable and on again when it is
 *    (ChannelConfig.setAutoRead): Netty then drops OP_READ, the kernel's
 *    receive queue fills and the client's writes block.
 * 2. Half-close. By default Netty closes a channel when a read returns -1
 *    (AbstractNioByteChannel.NioByteUnsafe.closeOnRead), and closing fails
 *    whatever is still queued in the outbound buffer. With ALLOW_HALF_CLOSURE
 *    it shuts the input down and fires ChannelInputShutdownEvent instead;
 *    the handler then writes an empty buffer behind the queued echoes and
 *    closes the channel when that write completes (ChannelFutureListener.CLOSE).
 * 3. Accept errors. At EMFILE the accept throws; NioMessageUnsafe.read fires
 *    exceptionCaught without closing a ServerChannel (closeOnReadError), and
 *    ServerBootstrap's ServerBootstrapAcceptor turns the listener's auto-read
 *    off for 1 s ("stop accept new connections for 1 second to allow the
 *    channel to recover", netty issue 1328), then passes the exception on.
 *    Left to the end of the listener's pipeline, TailContext logs it (WARN,
 *    through java.util.logging when no other logging library is on the class
 *    path), and the first record SimpleFormatter formats loads the default
 *    TimeZone, which opens lib/tzdb.dat: at EMFILE that fails with a
 *    java.lang.Error (ExceptionInInitializerError) that escapes
 *    NioEventLoop.run and ends the boss loop's thread: no connection is
 *    accepted again. So a handler after the acceptor takes the exception
 *    (one line on stderr) and the acceptor's pause does the rest. And the
 *    JDK makes a descriptor of its own the first time a socket is written or
 *    closed (sun.nio.ch.FileDispatcherImpl's static initializer opens the
 *    socketpair its preClose dup2s over a closing descriptor): at EMFILE
 *    that fails with an ExceptionInInitializerError that ends the event loop
 *    that met it, and every later write or close in any loop fails with
 *    NoClassDefFoundError. So main has it made at start, while descriptors
 *    are free: a FileChannel uses the same dispatcher.
 *
 * Listens on $REACTORLAB_LISTEN (host:port), else args[0], else
 * 127.0.0.1:7070; exits by itself after $LIFETIME_S (else args[1], else
 * 3600) seconds. SIGTERM is the JVM's: shutdown hooks (none) and exit 143.
 */
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

public final class NettyEcho {

    /** EchoServerHandler of Netty's example, with backpressure and half-close. */
    @ChannelHandler.Sharable
    static final class EchoServerHandler extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ctx.write(msg);
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            ctx.flush();
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            // Read only while the outbound buffer is under its high water mark.
            ctx.channel().config().setAutoRead(ctx.channel().isWritable());
            ctx.fireChannelWritabilityChanged();
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof ChannelInputShutdownEvent) {
                // The client's FIN: send what is queued, then close.
                ctx.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
            }
            ctx.fireUserEventTriggered(evt);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close(); // a reset, EPIPE: nothing more can be delivered
        }
    }

    /** Takes the listener's accept errors once ServerBootstrapAcceptor has paused accepting. */
    static final class AcceptErrors extends ChannelInboundHandlerAdapter {
        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            System.err.println("NettyEcho: accept: " + cause + " (accepting again in 1 s)");
        }
    }

    public static void main(String[] args) throws Exception {
        Listen at = Listen.parse(args);
        FileChannel.open(Path.of("/dev/null")).close(); // FileDispatcherImpl's socketpair, now
        EventLoopGroup bossGroup = new NioEventLoopGroup(1);
        EventLoopGroup workerGroup = new NioEventLoopGroup();
        final EchoServerHandler serverHandler = new EchoServerHandler();
        try {
            ServerBootstrap b = new ServerBootstrap();
            b.group(bossGroup, workerGroup)
             .channel(NioServerSocketChannel.class)
             .option(ChannelOption.SO_BACKLOG, 100)
             .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
             .childHandler(new ChannelInitializer<SocketChannel>() {
                 @Override
                 public void initChannel(SocketChannel ch) {
                     ch.pipeline().addLast(serverHandler);
                 }
             });
            Channel server = b.bind(at.host, at.port).sync().channel();
            // After the ServerBootstrapAcceptor, which bind() has added by now.
            // -Dnettyecho.acceptErrors=tail leaves them to the pipeline's end
            // instead, as a server without such a handler does
            // (NettyEchoTailLogsAcceptErrors.peer).
            if (!"tail".equals(System.getProperty("nettyecho.acceptErrors"))) {
                server.pipeline().addLast(new AcceptErrors());
            }
            System.err.println("NettyEcho: listening on " + server.localAddress());
            server.eventLoop().schedule(() -> server.close(), at.lifetimeNanos, TimeUnit.NANOSECONDS);
            server.closeFuture().sync();
        } finally {
            bossGroup.shutdownGracefully();
            workerGroup.shutdownGracefully();
        }
    }
}
