// Package peer has one job: what every peer server here shares — where it
// listens, how long it may live, and when it must stop.
//
// A peer listens on --listen, else $REACTORLAB_LISTEN (the harness sets
// it), else 127.0.0.1:7070; it prints "<name>: listening on ADDR" on stderr
// once listening, and stops on SIGTERM or SIGINT, or at the end of
// --lifetime (default 1h), so every run is bounded. A peer on a library
// with several event loops also takes --loops N (default 0: the library's
// own choice, unchanged); a peer without loops refuses the flag.
package peer

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Options are a peer's command line. Lifetime > 0 and Loops >= 0 hold
// after a successful Parse; Loops is 0 unless the peer takes --loops and
// it was given.
type Options struct {
	Addr     string
	Lifetime time.Duration
	// Loops is the number of event loops asked for (0: the library's
	// default).
	Loops int
}

// Parse reads the command line of the peer called name. loops is the help
// text of its --loops flag (what the number sets, in the library's
// terms), "" for a peer without loops, which then has no such flag. An
// error has been printed with the usage; the caller exits 2.
func Parse(name string, args []string, loops string) (Options, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var o Options
	fs.StringVar(&o.Addr, "listen", "", "address host:port (default $REACTORLAB_LISTEN, else 127.0.0.1:7070)")
	fs.DurationVar(&o.Lifetime, "lifetime", time.Hour, "stop by itself after this long (> 0)")
	if loops != "" {
		fs.IntVar(&o.Loops, "loops", 0, loops+" (>= 0; 0: the library's default)")
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("%s: unexpected argument %q", name, fs.Arg(0))
		fmt.Fprintln(os.Stderr, err)
		return o, err
	}
	if o.Lifetime <= 0 {
		err := fmt.Errorf("%s: --lifetime %v: want > 0", name, o.Lifetime)
		fmt.Fprintln(os.Stderr, err)
		return o, err
	}
	if o.Loops < 0 {
		err := fmt.Errorf("%s: --loops %d: want >= 0", name, o.Loops)
		fmt.Fprintln(os.Stderr, err)
		return o, err
	}
	if o.Addr == "" {
		o.Addr = os.Getenv("REACTORLAB_LISTEN")
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:7070"
	}
	return o, nil
}

// Context is done on SIGTERM, SIGINT or at the end of the lifetime.
func (o Options) Context() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	ctx, cancel := context.WithTimeoutCause(ctx, o.Lifetime, errors.New("lifetime over"))
	return ctx, func() { cancel(); stop() }
}
