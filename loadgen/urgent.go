package loadgen

// UrgentOutcome is what became of the urgent class (Config.UrgentEvery),
// for one data connection or summed over all of them.
//
// The schedule is open-loop: tick k of the run is intended at
// k·UrgentEvery after the start of sending and belongs to data connection
// k mod n (n hot and steady sources, in Result.Conns order), so each
// connection has its own ticks every n·UrgentEvery. At its tick a
// connection sends one urgent byte, send(fd, [v], MSG_OOB), with a value
// v in 1..255 that changes from tick to tick, and the target answers
// with one urgent byte of the same value. The time from the tick's
// intended time to the answer is class "urgent".
//
// TCP carries one urgent mark per connection (see the package doc's
// "Urgent data"): a second urgent byte sent before the first was read
// takes its mark, and the first is either dropped or becomes an in-band
// byte in the frame stream. So a connection never has more than one
// urgent byte outstanding. A tick that comes while its connection still
// waits for the answer to its previous byte is skipped at its intended
// time (Skipped counts it) and held back: once the answer arrives, the
// ticks held back are sent one after the other, each on the previous
// one's answer, and each is stamped with and measured from its own
// intended time. A target that stalls its urgent answers for S therefore
// shows the whole stall in "urgent" (a latency for every tick of it,
// spread over [0, S]: corrected for coordinated omission, as the control
// class is). Ticks still held back when sending ends are never sent
// (NotSent): they are in Skipped, and in no latency.
//
// Invariants of a finished run: Sent = Answered + Mismatched + Unanswered
// (an unsolicited answer settles nothing), NotSent <= Skipped, and the
// ticks intended while sending, on connections that stayed open, are
// Sent + NotSent. The counts cover the whole run, the
// warm-up included, as the frame accounting does; the latencies only the
// measured period.
type UrgentOutcome struct {
	// Sent counts urgent bytes sent.
	Sent uint64 `json:"sent"`
	// Answered counts urgent answers carrying the byte outstanding.
	Answered uint64 `json:"answered"`
	// Mismatched counts urgent answers carrying another byte than the one
	// outstanding; each settles the outstanding byte. Any makes the run
	// invalid.
	Mismatched uint64 `json:"mismatched"`
	// Unsolicited counts urgent bytes received while none was outstanding.
	// Any makes the run invalid; it settles nothing.
	Unsolicited uint64 `json:"unsolicited,omitempty"`
	// Unanswered counts urgent bytes still unanswered at the end. They
	// make the run invalid unless it was interrupted or the target had
	// acknowledged our STOP.
	Unanswered uint64 `json:"unanswered"`
	// Skipped counts ticks whose connection was still waiting for the
	// answer to its previous urgent byte (or could not take the byte: a
	// full send buffer) at their intended time; each was sent later, or
	// never (NotSent).
	Skipped uint64 `json:"skipped"`
	// NotSent counts the skipped ticks never sent: still held back when
	// sending ended.
	NotSent uint64 `json:"not_sent"`
}

// add sums b's counts into u.
func (u *UrgentOutcome) add(b UrgentOutcome) {
	u.Sent += b.Sent
	u.Answered += b.Answered
	u.Mismatched += b.Mismatched
	u.Unsolicited += b.Unsolicited
	u.Unanswered += b.Unanswered
	u.Skipped += b.Skipped
	u.NotSent += b.NotSent
}

// Balanced reports whether every urgent byte sent was settled once:
// Sent = Answered + Mismatched + Unanswered, and NotSent <= Skipped.
func (u UrgentOutcome) Balanced() bool {
	return u.Sent == u.Answered+u.Mismatched+u.Unanswered && u.NotSent <= u.Skipped
}
