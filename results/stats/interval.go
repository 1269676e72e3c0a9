package stats

import (
	"fmt"
	"math"
	"strconv"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/reactorlab/reactorlab/results/figure"
)

// Confidence is the coverage of every percentile interval reactorlab
// reports: 95%, split evenly between the two tails.
const Confidence = 0.95

// Interval is a percentile's confidence interval (Confidence), from the
// exact binomial distribution of order statistics, so free of any
// assumption about the latency distribution: of n samples, the number
// below the true q-quantile is Binomial(n, q), and [X(l), X(u)], the l-th
// and u-th smallest samples, holds the quantile with probability
// P(l ≤ B ≤ u−1) ≥ Confidence. It is read from a histogram's counts, so it
// merges across intervals, loops and shards as the histogram does; its
// bounds are the lowest and highest values equivalent to X(l) and X(u) in
// the histogram's precision, which only widens it.
//
// When n is too small for the percentile — even the smallest and the
// largest sample would not bound it with that probability — there is no
// interval: TooFew is set, and Need is the smallest n that has one (at
// p99.9, 2,995: below that the p99.9 of the samples is, in effect, their
// maximum).
//
// Samples that depend on each other are worth fewer than their number.
// Where the load generator's independence gate failed, the interval
// counts one sample in k (Thinning k > 1, IntervalThinning): it is the
// one of n/k independent samples, its ranks scaled back to n, so wider,
// and Need is k times as many. Where no thinning up to MaxThinning passed
// the gate (ThinningUnknown), there is no interval at all.
type Interval struct {
	LoUs float64 `json:"lo_us"`
	HiUs float64 `json:"hi_us"`
	// TooFew: n does not bound this percentile; LoUs and HiUs are zero.
	TooFew bool `json:"too_few,omitempty"`
	// Need is the fewest samples with an interval for this percentile.
	Need int64 `json:"need"`
	// Thinning is the k the interval was computed for (0 or 1: the
	// samples taken as independent; ThinningUnknown: correlated beyond
	// every k tried, no interval).
	Thinning int `json:"thinning,omitempty"`
}

// ThinningUnknown is the thinning of samples correlated at every lag up
// to MaxThinning: their worth is unknown, and no interval is given.
const ThinningUnknown = -1

// String is the interval as a reader sees it: "[lo–hi] µs", or, when
// the samples are too few, TooFewText.
func (iv Interval) String() string {
	if iv.TooFew {
		return iv.TooFewText()
	}
	return "[" + figure.Range(iv.LoUs, iv.HiUs) + "] µs"
}

// TooFewText is what a table prints instead of a figure whose samples
// are too few for an interval: "too few: n < 2,995", with the samples'
// correlation when it is why: "too few: n < 11,980 (correlated: every 4th
// counts)", "no interval: samples correlated beyond 64 apart".
func (iv Interval) TooFewText() string {
	switch {
	case iv.Thinning == ThinningUnknown:
		return fmt.Sprintf("no interval: samples correlated beyond %d apart", MaxThinning)
	case iv.Thinning > 1:
		return fmt.Sprintf("too few: n < %s (correlated: every %s counts)", figure.Count(iv.Need), ordinal(iv.Thinning))
	}
	return "too few: n < " + figure.Count(iv.Need)
}

// ordinal is 2nd, 3rd, 4th, 21st.
func ordinal(k int) string {
	suffix := "th"
	switch {
	case k%100 >= 11 && k%100 <= 13:
	case k%10 == 1:
		suffix = "st"
	case k%10 == 2:
		suffix = "nd"
	case k%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(k) + suffix
}

// PercentileInterval is the Confidence interval of h's percentile p (0 <
// p < 100) in h's units, converted to µs by dividing by 1e3 (h records
// nanoseconds).
func PercentileInterval(h *hdrhistogram.Histogram, p float64) Interval {
	q := p / 100
	n := h.TotalCount()
	iv := Interval{Need: samplesFor(q)}
	l, u, ok := orderStatistics(n, q)
	if !ok {
		iv.TooFew = true
		return iv
	}
	lo, hi := orderStatisticBounds(h, l, u)
	iv.LoUs, iv.HiUs = us(lo), us(hi)
	return iv
}

// ThinnedInterval is PercentileInterval for samples of which only every
// k-th is free of their correlation (Interval's Thinning): the ranks of
// the interval for n/k samples, scaled back to h's n outward. k ≤ 1 is
// PercentileInterval; ThinningUnknown gives no interval.
func ThinnedInterval(h *hdrhistogram.Histogram, p float64, k int) Interval {
	switch {
	case k == ThinningUnknown:
		return Interval{TooFew: true, Thinning: ThinningUnknown}
	case k <= 1:
		return PercentileInterval(h, p)
	}
	q := p / 100
	n := h.TotalCount()
	m := n / int64(k)
	iv := Interval{Need: samplesFor(q) * int64(k), Thinning: k}
	l, u, ok := orderStatistics(m, q)
	if !ok {
		iv.TooFew = true
		return iv
	}
	scale := float64(n) / float64(m)
	lo, hi := orderStatisticBounds(h, int64(float64(l-1)*scale)+1, min(n, int64(math.Ceil(float64(u)*scale))))
	iv.LoUs, iv.HiUs = us(lo), us(hi)
	return iv
}

// orderStatistics are the 1-based ranks l ≤ u of the interval's bounds
// among n samples for the q-quantile: the pair closest together with
// P(l ≤ B ≤ u−1) ≥ Confidence, B ~ Binomial(n, q), ties going to the
// coverage nearer Confidence. Exact intervals are conservative, since B
// takes whole values; equal tails (α/2 below, α/2 above) would cover 98%
// at p99.9 of 5,000 samples, the narrowest pair 96%. It looks for l
// within four standard deviations of B (at most 64 ranks) around the
// equal-tails one, where the narrowest lies, and at 1, the widest, which
// covers enough whenever any l does. ok is false when no pair of ranks in
// 1..n covers enough: n < samplesFor(q).
func orderStatistics(n int64, q float64) (l, u int64, ok bool) {
	if n <= 0 || q <= 0 || q >= 1 || n < samplesFor(q) {
		return 0, 0, false
	}
	tail := (1 - Confidence) / 2
	mid := searchLast(1, n, func(k int64) bool { return binomCDF(k-1, n, q) <= tail })
	window := min(int64(math.Ceil(4*math.Sqrt(float64(n)*q*(1-q))))+2, 64)
	cands := []int64{1} // the widest lower bound, which covers enough whenever any does
	for cand := max(2, mid-window); cand <= min(n, mid+window); cand++ {
		cands = append(cands, cand)
	}
	bestCover := 2.0
	for _, cand := range cands {
		below := binomCDF(cand-1, n, q)
		v := searchFirst(cand, n, func(k int64) bool { return binomCDF(k-1, n, q)-below >= Confidence })
		if v == 0 {
			continue
		}
		cover := binomCDF(v-1, n, q) - below
		if !ok || v-cand < u-l || (v-cand == u-l && cover < bestCover) {
			l, u, bestCover, ok = cand, v, cover, true
		}
	}
	return l, u, ok
}

// samplesFor is the fewest samples for which the q-quantile has an
// interval: the widest pair of ranks, the smallest and the largest
// sample, covers it with probability 1 − (1−q)^n − q^n, which must reach
// Confidence.
func samplesFor(q float64) int64 {
	covers := func(n int64) bool {
		return 1-math.Pow(1-q, float64(n))-math.Pow(q, float64(n)) >= Confidence
	}
	hi := int64(2)
	for !covers(hi) {
		hi *= 2
	}
	return searchFirst(1, hi, covers)
}

// searchLast returns the largest k in [lo, hi] for which ok holds, ok
// being true up to some k and false after it; lo−1 if it holds for none.
func searchLast(lo, hi int64, ok func(int64) bool) int64 {
	found := lo - 1
	for lo <= hi {
		mid := lo + (hi-lo)/2
		if ok(mid) {
			found, lo = mid, mid+1
		} else {
			hi = mid - 1
		}
	}
	return found
}

// searchFirst returns the smallest k in [lo, hi] for which ok holds, ok
// being false up to some k and true after it; 0 if it holds for none.
func searchFirst(lo, hi int64, ok func(int64) bool) int64 {
	found := int64(0)
	for lo <= hi {
		mid := lo + (hi-lo)/2
		if ok(mid) {
			found, hi = mid, mid-1
		} else {
			lo = mid + 1
		}
	}
	return found
}

// orderStatisticBounds returns the lowest value equivalent to the l-th
// smallest recorded value and the highest equivalent to the u-th (a
// histogram's bars are bounded so).
func orderStatisticBounds(h *hdrhistogram.Histogram, l, u int64) (lo, hi int64) {
	var seen int64
	loSet := false
	for _, b := range h.Distribution() {
		if b.Count == 0 {
			continue
		}
		seen += b.Count
		if !loSet && seen >= l {
			lo, loSet = b.From, true
		}
		if seen >= u {
			return lo, b.To
		}
	}
	return lo, h.Max()
}

// binomCDF is P(B ≤ k) for B ~ Binomial(n, p): the regularized
// incomplete beta function I_{1−p}(n−k, k+1).
func binomCDF(k, n int64, p float64) float64 {
	switch {
	case k < 0:
		return 0
	case k >= n:
		return 1
	}
	return regIncBeta(float64(n-k), float64(k+1), 1-p)
}

// regIncBeta is the regularized incomplete beta function I_x(a, b), by
// its continued fraction (modified Lentz), on the side of x where it
// converges fast.
func regIncBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaFraction(a, b, x) / a
	}
	return 1 - front*betaFraction(b, a, 1-x)/b
}

// betaFraction evaluates the continued fraction of the incomplete beta
// function (Numerical Recipes' betacf) to double precision, by the
// modified Lentz method: each term aa updates c and d (lentzStep) and
// multiplies f by their product.
func betaFraction(a, b, x float64) float64 {
	const tiny, eps = 1e-300, 1e-15
	qab, qap, qam := a+b, a+1, a-1
	c, d := 1.0, 1-qab*x/qap
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	f := d
	for m := 1; m <= 10000; m++ {
		fm := float64(m)
		m2 := 2 * fm
		c, d = lentzStep(fm*(b-fm)*x/((qam+m2)*(a+m2)), c, d)
		f *= d * c
		c, d = lentzStep(-(a+fm)*(qab+fm)*x/((a+m2)*(qap+m2)), c, d)
		del := d * c
		f *= del
		if math.Abs(del-1) < eps {
			break
		}
	}
	return f
}

// lentzStep is one term aa of the modified Lentz method: c and d updated,
// d inverted, neither allowed to vanish.
func lentzStep(aa, c, d float64) (float64, float64) {
	const tiny = 1e-300
	d = 1 + aa*d
	if math.Abs(d) < tiny {
		d = tiny
	}
	c = 1 + aa/c
	if math.Abs(c) < tiny {
		c = tiny
	}
	return c, 1 / d
}

// us converts a histogram's nanoseconds to the microseconds an Interval
// holds.
func us(ns int64) float64 { return float64(ns) / 1e3 }
