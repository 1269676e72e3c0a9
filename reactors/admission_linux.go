//go:build linux

package reactors

import "time"

// limiter is one loop's admission limit (Config.Admission): a token bucket
// that refuses DATA on data connections while the loop is past saturation.
// A round is saturated when a source turn ended on a budget (frames, bytes
// or time), the consume pass left data sources queued, or the loop has not
// blocked in epoll_wait since the round before: it had more data than its
// budgets let it serve, or no moment without work (a flat loop whose
// clients keep fewer frames in flight than a turn's budget never runs a
// turn into one, however far behind it is). The limiter is engaged after
// Config.AdmissionAfter saturated rounds in a row and released once the
// bucket has stayed full, with no round saturated, for admissionRelease:
// the offered load has fitted under the rate for that long. (Released any
// sooner, a loop at 2× overload would serve every frame again until its
// backlog next ran a turn into a budget, and its control connection would
// wait behind that backlog meanwhile.) Control connections are never
// limited: the limiter exists to keep their path clear.
type limiter struct {
	perNs    float64 // tokens per nanosecond
	burst    float64
	tokens   float64
	last     int64 // nanotime of the last refill
	after    int   // saturated rounds in a row that engage it
	streak   int   // saturated rounds in a row so far
	engaged  bool
	calmFrom int64  // nanotime since which the bucket has been full with no round saturated (0: not)
	lastHits uint64 // the loop's budget-hit counters at the end of the last round
	lastWait uint64 // its blocking epoll_waits then
}

// newLimiter returns the limiter for a (nil when it is open), full.
func newLimiter(a Admission, after int) *limiter {
	if a.Open() {
		return nil
	}
	return &limiter{perNs: a.Rate / 1e9, burst: float64(a.Burst), tokens: float64(a.Burst), after: after}
}

// endAdmissionRound refills the bucket to now and moves the engagement by
// whether the round that ended was saturated.
func (l *Loop) endAdmissionRound(now int64) {
	a := l.admit
	if a.last != 0 {
		a.tokens = min(a.burst, a.tokens+float64(now-a.last)*a.perNs)
	}
	a.last = now
	hits := l.stats.InputBudgetHits + l.stats.ByteBudgetHits + l.stats.TimeBudgetHits
	saturated := hits != a.lastHits || l.ready.Len() > 0 || l.stats.BlockingWaits == a.lastWait
	a.lastHits, a.lastWait = hits, l.stats.BlockingWaits
	if !saturated && a.tokens >= a.burst {
		if a.calmFrom == 0 {
			a.calmFrom = now
		}
	} else {
		a.calmFrom = 0
	}
	switch {
	case saturated:
		a.streak++
		if !a.engaged && a.streak >= a.after {
			a.engaged = true
			l.stats.AdmissionEngaged++
		}
	case a.engaged && a.calmFrom != 0 && now-a.calmFrom >= admissionRelease:
		a.engaged, a.streak = false, 0
	default:
		a.streak = 0
	}
}

// admissionRelease is how long the bucket must stay full, with no round
// saturated, before an engaged limit is released.
const admissionRelease = int64(time.Second)

// admitted reports whether a DATA frame on s may be served: always on a
// control connection or while the limiter is released; otherwise if a
// token is left, which it takes. The FloodAdmission mutant takes no token
// and admits everything.
func (l *Loop) admitted(s *Source) bool {
	a := l.admit
	if s.control || !a.engaged || l.cfg.Faults.AdmissionIgnored {
		return true
	}
	if a.tokens < 1 {
		return false
	}
	a.tokens--
	return true
}
