// Package oneshot is the EPOLLONESHOT reference reactor: Config.Threads
// worker threads, each locked to its OS thread, wait on one shared epoll fd.
//
// An event disarms the source and gives one worker exclusive ownership of
// it; the worker serves one turn (work left stays on that worker's own ready
// queue, unarmed) and then rearms it explicitly with EPOLL_CTL_MOD. It
// demonstrates that ONESHOT moves re-arming into the application: it gives
// exclusive ownership without locks per connection, but no rotation or
// fairness by itself, and one forgotten rearm silences a connection for good
// (the MissedRearmEvery mutant). Callbacks run inline on the workers, which
// are the pool.
package oneshot
