/*
 * Netty's own echo example as it is: EchoServer and EchoServerHandler of
 * io.netty.example.echo in Netty 4.1 (ctx.write(msg) in channelRead,
 * ctx.flush() in channelReadComplete, cause.printStackTrace() and
 * ctx.close() in exceptionCaught; a boss group of one loop, a worker group,
 * SO_BACKLOG 100, a LoggingHandler(LogLevel.INFO) on the listener), without
 * its optional SSL (off unless -Dssl). NettyEcho is the same with
 * backpressure and the half-close (and without the LoggingHandler).
 *
 * What it leaves out: auto-read is always on, so a client that does not read
 * has everything it sends queued in its ChannelOutboundBuffer (ctx.write
 * never refuses; isWritable() turns false over the high water mark but
 * nothing looks at it); and at the client's FIN (ALLOW_HALF_CLOSURE false,
 * the default) AbstractNioByteChannel closes the channel, which fails the
 * echoes still queued.
 *
 * Listens on $REACTORLAB_LISTEN (host:port), else args[0], else
 * 127.0.0.1:7070; exits by itself after $LIFETIME_S (else args[1], else
 * 3600) seconds. SIGTERM is the JVM's: shutdown hooks (none) and exit 143.
 */
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.logging.LogLevel;
import io.netty.handler.logging.LoggingHandler;
import java.util.concurrent.TimeUnit;

public final class NettyExampleEcho {

    /** Handler implementation for the echo server (Netty's EchoServerHandler). */
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
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            // Close the connection when an exception is raised.
            cause.printStackTrace();
            ctx.close();
        }
    }

    public static void main(String[] args) throws Exception {
        Listen at = Listen.parse(args);
        // Configure the server.
        EventLoopGroup bossGroup = new NioEventLoopGroup(1);
        EventLoopGroup workerGroup = new NioEventLoopGroup();
        final EchoServerHandler serverHandler = new EchoServerHandler();
        try {
            ServerBootstrap b = new ServerBootstrap();
            b.group(bossGroup, workerGroup)
             .channel(NioServerSocketChannel.class)
             .option(ChannelOption.SO_BACKLOG, 100)
             .handler(new LoggingHandler(LogLevel.INFO))
             .childHandler(new ChannelInitializer<SocketChannel>() {
                 @Override
                 public void initChannel(SocketChannel ch) {
                     ChannelPipeline p = ch.pipeline();
                     p.addLast(serverHandler);
                 }
             });

            // Start the server.
            Channel server = b.bind(at.host, at.port).sync().channel();
            System.err.println("NettyExampleEcho: listening on " + server.localAddress());
            server.eventLoop().schedule(() -> server.close(), at.lifetimeNanos, TimeUnit.NANOSECONDS);

            // Wait until the server socket is closed.
            server.closeFuture().sync();
        } finally {
            // Shut down all event loops to terminate all threads.
            bossGroup.shutdownGracefully();
            workerGroup.shutdownGracefully();
        }
    }
}
