// Package et is the edge-triggered reference reactor with an application
// ready queue.
//
// With EPOLLET a source that is still readable when its budget runs out gets
// no new edge, so the event only enqueues the source (once: dedup on
// enqueue); each round serves the head of the queue round-robin, at most
// Budgets.Consume sources, each until EAGAIN, EOF or a spent budget; a source
// whose budget ran out goes back to the tail; and the loop waits with
// timeout 0 while the queue is non-empty. It demonstrates that ET is correct
// only together with this queue (the NoDrain mutant shows what happens
// without it) and that it trades idle waits for rotation.
package et
