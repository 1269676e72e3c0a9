package loadgen

import "fmt"

// The churn's latency classes (Config.ChurnRate), in nanoseconds, present
// only with churn.
const (
	// ClassChurn is, per churn connection answered intact, the time from
	// its intended connect instant to the end of its echo: corrected for
	// coordinated omission, as ClassData is for steady sources (a late
	// generator, or a connection skipped and counted, never hides a stall).
	ClassChurn = "churn"
	// ClassChurnUncorrected is the same connections' time from the
	// connect call itself to the end of the echo.
	ClassChurnUncorrected = "churn-uncorrected"
	// ClassChurnLag is, per churn connection opened, how late the
	// generator called connect: from its intended instant to the call. It
	// is the generator's own scheduling delay, as ClassSendLag is.
	ClassChurnLag = "churn-lag"
)

// ChurnOutcome is what became of the churn connections (Config.ChurnRate)
// of one loop, or of the whole run.
//
// The schedule is open-loop: burst k of the run is intended at
// k·ChurnBurst/ChurnRate seconds after the start of the measured
// schedule (the warm-up included), each of its ChurnBurst connections
// due at that instant; with several loops burst k goes to loop k mod
// Loops, so the run's schedule is the same for any number of loops. A
// connection due while ChurnMax churn connections are open (the loop's
// share of it) is skipped: counted, never opened. Each one opened makes a
// non-blocking connect; once connected it writes one DATA frame (Payload
// bytes, its own token, seq 0, stamped with its intended instant), reads
// the answer, and closes with an RST (SO_LINGER 0), so that no TIME_WAIT
// is left behind: at 20,000 connections/s a graceful close would take
// every ephemeral port of the default range (28,232) within 1.5 s, each
// held for TIME_WAIT's 60 s.
//
// Invariants of a finished run:
//
//	Scheduled = Opened + Skipped
//	Opened    = Connected + Refused + ConnectTimeouts + ConnectErrors
//	Connected = Answered + Rejected + WrongBytes + Reset + Closed + Unanswered
//
// (Balanced checks them). Refused, Reset, ConnectTimeouts and Skipped are
// figures of the target under the storm, never the generator's failure;
// WrongBytes and Closed make the run invalid, and so does Unanswered
// unless the run was interrupted or the target acknowledged our STOP. The
// counts cover the whole run, the warm-up included, as the frame
// accounting does; the latencies only the measured period.
type ChurnOutcome struct {
	// Scheduled counts connections whose instant came while sending.
	Scheduled uint64 `json:"scheduled"`
	// Opened counts connect calls made.
	Opened uint64 `json:"opened"`
	// Skipped counts connections not opened because ChurnMax were open.
	Skipped uint64 `json:"skipped"`
	// Connected counts connections established.
	Connected uint64 `json:"connected"`
	// Refused counts connects refused (ECONNREFUSED, or reset during the
	// handshake).
	Refused uint64 `json:"refused"`
	// ConnectTimeouts counts connects not established within
	// ConnectTimeout.
	ConnectTimeouts uint64 `json:"connect_timeouts"`
	// ConnectErrors counts connects that failed otherwise (no socket, no
	// port); Evidence has the first.
	ConnectErrors uint64 `json:"connect_errors"`
	// Answered counts frames echoed intact (header and payload).
	Answered uint64 `json:"answered"`
	// Rejected counts frames answered by a REJECT with their token and
	// seq.
	Rejected uint64 `json:"rejected"`
	// WrongBytes counts answers that failed a check (another kind, token,
	// seq, length, flags, send time or payload, or a stream that does not
	// decode).
	WrongBytes uint64 `json:"wrong_bytes"`
	// Reset counts connections reset by the target (ECONNRESET, EPIPE)
	// before their answer.
	Reset uint64 `json:"reset"`
	// Closed counts connections the target closed (EOF) before answering
	// in full, before our STOP was sent.
	Closed uint64 `json:"closed"`
	// Unanswered counts connections still waiting for their answer at the
	// end of the run (after the drain), or closed by the target after our
	// STOP was sent.
	Unanswered uint64 `json:"unanswered"`
	// MaxOpen is the most churn connections open at once (on one loop;
	// for the run, the sum of the loops' peaks, an upper bound).
	MaxOpen int `json:"max_open"`
	// Evidence holds the first few anomalies.
	Evidence []string `json:"evidence,omitempty"`
}

// maxChurnEvidence bounds ChurnOutcome.Evidence.
const maxChurnEvidence = 5

// add sums b into o.
func (o *ChurnOutcome) add(b ChurnOutcome) {
	o.Scheduled += b.Scheduled
	o.Opened += b.Opened
	o.Skipped += b.Skipped
	o.Connected += b.Connected
	o.Refused += b.Refused
	o.ConnectTimeouts += b.ConnectTimeouts
	o.ConnectErrors += b.ConnectErrors
	o.Answered += b.Answered
	o.Rejected += b.Rejected
	o.WrongBytes += b.WrongBytes
	o.Reset += b.Reset
	o.Closed += b.Closed
	o.Unanswered += b.Unanswered
	o.MaxOpen += b.MaxOpen
	for _, e := range b.Evidence {
		if len(o.Evidence) < maxChurnEvidence {
			o.Evidence = append(o.Evidence, e)
		}
	}
}

// Balanced reports whether every churn connection is accounted once (the
// three equations of ChurnOutcome).
func (o ChurnOutcome) Balanced() bool {
	return o.Scheduled == o.Opened+o.Skipped &&
		o.Opened == o.Connected+o.Refused+o.ConnectTimeouts+o.ConnectErrors &&
		o.Connected == o.Answered+o.Rejected+o.WrongBytes+o.Reset+o.Closed+o.Unanswered
}

// invalid returns why o makes the run invalid (nil: it does not):
// wrong answers, connections closed without an answer, connections
// unanswered at the end (excused when the run was interrupted or the
// target acknowledged our STOP), or counts that do not balance.
func (o ChurnOutcome) invalid(excused bool) []string {
	var out []string
	first := ""
	if len(o.Evidence) > 0 {
		first = "; first: " + o.Evidence[0]
	}
	if o.WrongBytes+o.Closed > 0 {
		out = append(out, fmt.Sprintf("churn: %d answers with wrong bytes, %d connections closed by the target without an answer, of %d connected%s",
			o.WrongBytes, o.Closed, o.Connected, first))
	}
	if o.Unanswered > 0 && !excused {
		out = append(out, fmt.Sprintf("churn: %d of %d connected churn connections unanswered when the run ended", o.Unanswered, o.Connected))
	}
	if !o.Balanced() {
		out = append(out, fmt.Sprintf("churn: counts do not balance: %+v", o))
	}
	return out
}
