// Package oneshot is the EPOLLONESHOT reference design: Config.Threads
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
//
// Its hooks (loop_linux.go): Config.Threads loops on one shared epoll fd
// (Layout.Shared: one slot table, one timer set, the listeners one-shot, a
// stop eventfd instead of ingress); connections registered EPOLLONESHOT; an
// event is served at once by the worker it woke, which then rearms the
// source unless the turn left it queued (OnEvent); a turn cut by a budget
// is requeued only with complete frames buffered (Requeue); a round serves
// up to Budgets.Consume sources of the worker's own queue, rearming each
// one whose turn is over (Consume); Rearm skips a source still queued or
// held for STOP_ACK. Its state is the rearm count, for the MissedRearmEvery
// mutant.
//
// It promises what every reference reactor promises (package reactors),
// that a connection is served by one worker at a time, and that STOP_ACK
// comes once every worker has quiesced. It takes no offload pool (Check
// refuses workers > 0). It does not promise rotation between a worker's
// sources beyond its own queue, nor any order between workers.
package oneshot
