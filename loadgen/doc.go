// Package loadgen has one job: drive one target over TCP with open- and
// closed-loop load and account for every frame, so that a measurement can be
// trusted or is loudly marked invalid ([Run]).
//
// # Sources
//
// Each source has its own connection and a distinct connection token (a
// fresh one after every reconnection):
//
//   - hot sources (closed loop): K frames in flight (Config.InFlight); every
//     read that brings n answers is followed by one write of n new frames;
//   - steady sources (open loop): Config.Rate/Config.Steady frames per
//     second each; frame seq has the intended send time phase + seq/rate, is
//     stamped (header SendNs) with it, and every frame due is written in one
//     write; at most Config.Window frames are outstanding, and a source whose
//     window is full, or whose socket is full, waits — the wait counts in
//     its corrected latency and is attributed to the target;
//   - control probes: a PING every Config.ControlEvery on each control
//     connection, one outstanding at a time. A PING still unanswered when
//     the next is due holds the next one back; when it is answered, the PINGs
//     due meanwhile follow one after the other, each stamped with and
//     measured from its own intended time, so a stall shows in full in
//     "control" (corrected for coordinated omission, as wrk2 does). A
//     health check runs on them ([HealthCheck]): a
//     PING answered more than Config.ControlTimeout after its intended time
//     is a false timeout, Config.RemovalAfter of them in a row on one
//     control connection a false removal (the count then starts again),
//     counted online where answers are settled, for answers read in the
//     measured period; a PING never answered is no false timeout but a lost
//     frame (see Accounting);
//   - the STOP probe: one STOP frame on the first control connection at
//     Config.StopAt after the warm-up; the time to STOP_ACK is class "stop"
//     and its ledger is decoded. A byte-echo target sends the STOP back:
//     that is reported as "not acknowledged: echoed", not as an error. The
//     sending phase ends when STOP_ACK arrives; frames the target never read
//     after it closed admission are "unanswered", not lost (only once
//     STOP_ACK has arrived: a STOP merely sent excuses nothing).
//   - urgent bytes (Config.UrgentEvery): one TCP urgent byte
//     (send(MSG_OOB)) every UrgentEvery on a data connection, the data
//     connections taking turns, answered by the target with an urgent byte
//     of the same value; one outstanding per connection, the ticks that
//     come meanwhile held back and measured from their own intended times
//     (see UrgentOutcome). A byte answered with another value, or never
//     answered, makes the run invalid.
//
// # Latency
//
// Classes of the Result's Recorder (nanoseconds; see the Class* constants):
// "data" is receive time minus intended time for steady sources (coordinated
// omission corrected) and minus the actual write for hot sources (a closed
// loop has no schedule: that is its nature, not an omission);
// "data-uncorrected" is receive time minus the actual write for both;
// "control", "urgent" and "stop" as above; "send-lag" is the generator's own
// scheduling delay per steady frame; "service/<source>" is the time between
// reads that brought answers on a data source while it had frames
// outstanding.
//
// # Accounting
//
// Every frame is stamped with its connection's token, a per-source seq and
// a checkable payload, and recorded in a per-connection ring indexed by seq
// (its size bounds the frames outstanding, so the ring never overwrites an
// outstanding frame). Each answer settles its frame as echoed (header and
// payload intact), rejected (REJECT with its token and seq) or a corrupted
// answer; an answer to a settled frame is a duplicate; a frame with another
// of our tokens was delivered to the wrong connection; a frame answering
// nothing of ours (a seq never sent, a token not ours, an unexpected kind, a
// broken stream) is unexpected. What is unanswered at the end is lost,
// unless a wire fault closed its connection (abandoned, the fault's doing)
// or the run was cut short by the caller or by the target's acknowledged
// STOP (unanswered; a STOP sent but never acknowledged excuses nothing).
// Accounting.Balanced checks that every frame sent was settled once. Loss,
// duplicates, corrupted answers, unexpected frames and wrong-connection
// deliveries make the Result invalid, with reasons naming the connection;
// so does a connection that ended while sending (the target closed it, not
// a wire fault of ours, and not after an acknowledged STOP), and, with no
// wire fault, a STOP_ACK ledger that accepted other than the DATA frames we
// saw answered.
//
// # Urgent data
//
// What TCP urgent data does on Linux, measured on loopback (Linux 6.18, a
// receiver with SO_OOBINLINE off unless said; RFC 6093 §3 describes the
// urgent pointer and its history) — the facts the urgent class is built
// on:
//
//   - one byte only: send("PQR", MSG_OOB) makes "R" the urgent byte;
//     recv(MSG_OOB) returns "R" and the in-band stream holds "PQ";
//   - a lone urgent byte makes the socket report EPOLLPRI, not EPOLLIN;
//     once recv(MSG_OOB) has read it, neither is reported, and recv(MSG_OOB)
//     again fails with EINVAL (as it does when no urgent byte was ever
//     sent);
//   - in-band reads stop at the mark: "abc", urgent "X", "def" reads as
//     "abc" (SIOCATMARK is then 1), then "def". An in-band read that starts
//     at the mark steps over an urgent byte not yet read and discards it:
//     recv(MSG_OOB) then fails with EINVAL. So the urgent byte must be
//     read before the in-band read of the same EPOLLPRI|EPOLLIN event;
//   - two urgent bytes in a row, the first not yet read: the second takes
//     the mark. With nothing in front of the first ("X" then "Y"), the
//     first is dropped: recv(MSG_OOB) gives "Y" and no in-band read ever
//     returns "X". With in-band bytes around it ("abc", "X", "def", "Y"),
//     the first becomes an in-band byte: reads return "abcXdef", a
//     corrupted frame stream. An urgent byte read before the next one is
//     sent is always delivered;
//   - SO_OOBINLINE on: recv(MSG_OOB) fails with EINVAL, EPOLLPRI is still
//     reported, the byte stays in the stream (SIOCATMARK 1 in front of it:
//     reads return "abc", then "Xdef");
//   - the mark is announced before its byte arrives: behind 1 MiB of
//     unread in-band data the receiver saw EPOLLIN and no EPOLLPRI, and
//     recv(MSG_OOB) failed with EAGAIN; once the in-band data up to the
//     mark was read, EPOLLPRI came and recv(MSG_OOB) returned the byte.
//
// Hence the urgent class's rules: one urgent byte outstanding per
// connection, EPOLLPRI handled before EPOLLIN, EAGAIN and EINVAL from
// recv(MSG_OOB) taken as "nothing to read yet". A target that does not
// take part (a byte echo, SO_OOBINLINE off as by default) never sees the
// byte in its in-band reads (they step over it) and never answers: the
// bytes are unanswered, the frame stream intact (TestUrgentNeverAnswered).
//
// # Wire faults
//
// With Config.Faults, every write batch of a data connection is a send
// plan (faults.Writes, one write per frame) rewritten by each fault in turn
// and played by the loop: writes, sleeps (that connection's writing waits),
// pauses of reading, half-close, close, reset. A step that ends the
// connection (close, reset, reconnect) ends the plan: frames already sent
// are abandoned by fault, frames not yet written go back to the queue and
// are rebuilt with the next connection's token, and the source reconnects
// at once. After a half-close the source reads until the target closes,
// then reconnects; frames still unanswered then are lost (the target must
// answer everything written before the FIN). After an over-size header the
// source reads until the target refuses and closes, then reconnects.
// Shaping faults (half-packets, coalesced, slow-consumer) keep every frame
// accounted.
//
// # Mechanics and limits
//
// A loop on a locked OS thread serves its connections with epoll
// (level-triggered), non-blocking sockets, a timerfd for the schedule and
// an eventfd for cancellation and the other loops' news: no goroutine per
// connection, batched reads whose frames are checked where they lie in the
// read buffer (only a frame split between two reads is copied), batched
// writes, and no allocation per frame (a fault plan allocates per batch).
// One loop uses at most one CPU; SelfCheck reports when that CPU, or its
// scheduling lag, was the limit rather than the target. BenchmarkCapacity
// compares that CPU per frame with the lt reference reactor's.
//
// # Engines
//
// Config.Engine chooses the system calls under all of the above:
// EngineEpoll (the default), as described, or EngineUring, an io_uring per
// loop: once connected (connecting stays on epoll), a connection's answers
// come from one multishot recv into the loop's provided buffer ring, and
// its sends join the round's queue, submitted with the wait in one
// io_uring_enter across connections (see uring_linux.go). The schedule, the
// correction, the accounting and the self-check are one code on both; the
// self-check names the engine (SelfCheck.Engine) and, for uring, the
// rings' counters (SelfCheck.Uring). EngineUring refuses wire faults,
// urgent bytes, churn and a hot lead.
//
// # Several loops
//
// Config.Loops runs that many loops, each on its own thread (pinned with
// Config.LoopCPUs), each with its own epoll set, timerfd, eventfd,
// recorder, token prefix and ledger. Source p of the list hot, steady,
// control goes to loop p mod Loops and keeps what it has in a run of one
// loop: its name, its steady period and phase, its urgent turn. So the
// aggregate schedule is the same for any number of loops, and so is the
// coordinated-omission correction: each steady source measures from its
// own intended times, whichever loop sends them. The loops connect in
// parallel and start sending at one instant (a common time 0 and wall
// start), so their intervals line up; the recorders are merged interval
// by interval (record.MergeRecorders), losslessly. What they share while
// running is small and atomic: cancellation, a failed loop, and the STOP
// probe's state — STOP goes on the first control connection's loop; once
// it is written, a close on any loop is the STOP's, and its
// acknowledgement wakes every loop to stop sending. A frame of one loop's
// source delivered on another loop's connection is counted as delivered
// to the wrong connection (the group knows every token). Progress reports
// are summed over the loops per interval boundary. Result.Loops has each
// loop's thread, CPU, connections, totals and self-check; the run's
// self-check says the generator was the limit when any loop's did, naming
// the loop. The loops run in parallel only if the process has a P for
// each (GOMAXPROCS >= Loops+1).
package loadgen
