// Package et is the edge-triggered reference design with an application
// ready queue.
//
// With EPOLLET a source that is still readable when its budget runs out gets
// no new edge, so the event only enqueues the source (once: dedup on
// enqueue); each round serves the head of the queue round-robin, at most
// Budgets.Consume sources, each until EAGAIN (or a short read, which
// says the socket is empty), EOF or a spent budget; a source
// whose budget ran out goes back to the tail; and the loop waits with
// timeout 0 while the queue is non-empty. It demonstrates that ET is correct
// only together with this queue (the NoDrain mutant shows what happens
// without it) and that it trades idle waits for rotation.
//
// Its hooks (loop_linux.go): one loop; connections registered EPOLLET; an
// event only enqueues (OnEvent → Enqueue, stamped with the wakeup time);
// any budget that ends a turn requeues it (Requeue: more); a
// round serves up to Budgets.Consume sources from the head (Consume). Its
// state is the NoDrain mutant's switch: one read per edge, never requeued.
//
// It promises what every reference reactor promises (package reactors),
// and that no input is left unserved for want of an edge. It does not
// promise that a source is served in the round its event arrives.
package et
