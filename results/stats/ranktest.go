package stats

import (
	"math"
	"slices"
)

// RankTest is the outcome of a two-sided Mann–Whitney U (Wilcoxon
// rank-sum) test of two samples X and Y.
type RankTest struct {
	// NX and NY are the sample sizes after dropping NaNs.
	NX, NY int
	// U is the Mann–Whitney statistic of X: the number of pairs (x, y)
	// with x > y, plus half the ties. It lies in [0, NX·NY]; above
	// NX·NY/2, X tends to be larger than Y.
	U float64
	// P is the two-sided p-value: the probability, under the hypothesis
	// that X and Y come from one distribution, of a rank sum at least as
	// far from its mean as the observed one. It is 1 when a sample is
	// empty or all values are equal.
	P float64
	// Exact is true when P comes from the exact permutation distribution
	// of the rank sum (with the samples' own mid-ranks, so exact with
	// ties too), false when it comes from the normal approximation with
	// tie and continuity correction.
	Exact bool
}

// exactBudget bounds the work of the exact distribution: n · k · 2nk steps
// of a counting recurrence (n = n1+n2, k = min(n1, n2), 2nk bounding the
// doubled rank sums), a few milliseconds at this size. Every sample size reactorlab's specs produce
// (a few repeats against a pooled baseline of tens of runs) is within it.
const exactBudget = 2e7

// MannWhitney runs the two-sided Mann–Whitney U test of x against y, with
// mid-ranks for ties. NaNs are dropped. P is exact (the permutation
// distribution of the rank sum, computed with the actual mid-ranks) when
// the computation is small (see RankTest.Exact), otherwise the normal
// approximation with tie and continuity correction. Symmetric: swapping x
// and y gives the same P and U' = NX·NY − U.
func MannWhitney(x, y []float64) RankTest { return mannWhitney(x, y, exactBudget) }

// mannWhitney is MannWhitney with the exact computation's budget: 0 forces
// the normal approximation (for tests).
func mannWhitney(x, y []float64, budget float64) RankTest {
	x, y = dropNaN(x), dropNaN(y)
	n1, n2 := len(x), len(y)
	t := RankTest{NX: n1, NY: n2, P: 1, Exact: true}
	if n1 == 0 || n2 == 0 {
		return t
	}
	n := n1 + n2
	type obs struct {
		v   float64
		ofX bool
	}
	all := make([]obs, 0, n)
	for _, v := range x {
		all = append(all, obs{v: v, ofX: true})
	}
	for _, v := range y {
		all = append(all, obs{v: v})
	}
	slices.SortFunc(all, func(a, b obs) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	// Doubled mid-ranks are integers: a tie group over 1-based ranks
	// i+1..j has mid-rank (i+1+j)/2.
	doubled := make([]int, n)
	tieTerm := 0.0 // Σ (t³ − t) over tie groups
	for i := 0; i < n; {
		j := i + 1
		for j < n && all[j].v == all[i].v {
			j++
		}
		for k := i; k < j; k++ {
			doubled[k] = i + 1 + j
		}
		g := float64(j - i)
		tieTerm += g*g*g - g
		i = j
	}
	sumX2 := 0 // doubled rank sum of x
	for k, o := range all {
		if o.ofX {
			sumX2 += doubled[k]
		}
	}
	t.U = float64(sumX2)/2 - float64(n1*(n1+1))/2
	if tieTerm == float64(n*n*n-n) { // one tie group: nothing to rank
		return t
	}

	small := min(n1, n2)
	if 2*float64(n)*float64(n)*float64(small)*float64(small) <= budget {
		t.P = exactRankSumP(doubled, n1, sumX2)
		return t
	}
	t.Exact = false
	mu := float64(n1) * float64(n2) / 2
	sigma2 := float64(n1) * float64(n2) / 12 * (float64(n+1) - tieTerm/(float64(n)*float64(n-1)))
	if sigma2 <= 0 {
		return t
	}
	z := math.Max(math.Abs(t.U-mu)-0.5, 0) / math.Sqrt(sigma2)
	t.P = math.Min(1, math.Erfc(z/math.Sqrt2))
	return t
}

// exactRankSumP is the two-sided permutation p-value of the doubled rank
// sum obs of a sample of size n1 drawn from the doubled ranks: the
// fraction of the C(n, n1) subsets whose sum is at least as far from the
// mean n1·(n+1) as obs. It counts subsets of the smaller side (the
// complement's sum is determined) by a recurrence over the ranks.
func exactRankSumP(doubled []int, n1, obs int) float64 {
	n := len(doubled)
	total := 0
	for _, d := range doubled {
		total += d
	}
	k := n1
	if n-n1 < n1 { // count the complement: its sum is total − obs
		k = n - n1
		obs = total - obs
	}
	maxSum := 0
	for _, d := range doubled {
		maxSum = max(maxSum, d)
	}
	maxSum *= k
	// ways[j][s]: subsets of size j of the ranks seen so far with
	// doubled sum s. Counts are float64: exact below 2^53, and only their
	// ratio matters.
	ways := make([][]float64, k+1)
	for j := range ways {
		ways[j] = make([]float64, maxSum+1)
	}
	ways[0][0] = 1
	for i, d := range doubled {
		for j := min(i+1, k); j >= 1; j-- {
			from, to := ways[j-1], ways[j]
			for s := maxSum; s >= d; s-- {
				if from[s-d] != 0 {
					to[s] += from[s-d]
				}
			}
		}
	}
	mean2 := k * (n + 1) // doubled mean of the size-k sum
	dev := abs(obs - mean2)
	var tail, all float64
	for s, w := range ways[k] {
		if w == 0 {
			continue
		}
		all += w
		if abs(s-mean2) >= dev {
			tail += w
		}
	}
	return math.Min(1, tail/all)
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}

func dropNaN(v []float64) []float64 {
	if !slices.ContainsFunc(v, math.IsNaN) {
		return v
	}
	return slices.DeleteFunc(slices.Clone(v), math.IsNaN)
}

// MinPValue is the smallest two-sided p-value the rank test can give for
// samples of sizes n1 and n2, whatever their values: 2 / C(n1+n2, n1),
// capped at 1 (1 when a sample is empty). If MinPValue times the number of
// comparisons a Holm correction covers exceeds alpha, no comparison of that
// size can be significant.
func MinPValue(n1, n2 int) float64 {
	if n1 <= 0 || n2 <= 0 {
		return 1
	}
	return math.Min(1, 2/binomial(n1+n2, n1))
}

// binomial is C(n, k) as a float64 (+Inf beyond float64's range).
func binomial(n, k int) float64 {
	k = min(k, n-k)
	c := 1.0
	for i := 1; i <= k; i++ {
		c = c * float64(n-k+i) / float64(i)
	}
	return math.Round(c)
}

// HolmAdjust returns the Holm–Bonferroni adjusted p-values of ps, in ps's
// order: sorted ascending, the i-th smallest (from 0) becomes the running
// maximum of (m − i)·p, capped at 1. The adjusted values are monotone in
// the raw ones and each is at least its raw value. A NaN counts as 1.
// Rejecting where the adjusted p < alpha controls the family-wise error
// rate at alpha.
func HolmAdjust(ps []float64) []float64 {
	m := len(ps)
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	p := func(i int) float64 {
		if math.IsNaN(ps[i]) {
			return 1
		}
		return ps[i]
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case p(a) < p(b):
			return -1
		case p(a) > p(b):
			return 1
		}
		return 0
	})
	adj := make([]float64, m)
	running := 0.0
	for rank, i := range order {
		running = math.Max(running, math.Min(1, float64(m-rank)*p(i)))
		adj[i] = running
	}
	return adj
}
