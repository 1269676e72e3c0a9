/*
 * The peers' black-box contract, for the Netty peers: the address from
 * $REACTORLAB_LISTEN (host:port), else args[0], else 127.0.0.1:7070; the
 * lifetime from $LIFETIME_S, else args[1], else 3600 seconds.
 */
final class Listen {
    final String host;
    final int port;
    final long lifetimeNanos;

    private Listen(String host, int port, long lifetimeNanos) {
        this.host = host;
        this.port = port;
        this.lifetimeNanos = lifetimeNanos;
    }

    static Listen parse(String[] args) {
        String listen = System.getenv("REACTORLAB_LISTEN");
        if (listen == null || listen.isEmpty()) {
            listen = args.length > 0 ? args[0] : "127.0.0.1:7070";
        }
        String life = System.getenv("LIFETIME_S");
        if (life == null || life.isEmpty()) {
            life = args.length > 1 ? args[1] : "3600";
        }
        int colon = listen.lastIndexOf(':');
        String host = listen.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        return new Listen(host, Integer.parseInt(listen.substring(colon + 1)), (long) (Double.parseDouble(life) * 1e9));
    }
}
