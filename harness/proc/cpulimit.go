package proc

import "time"

// DefaultCPUPeriod is the CFS bandwidth period a CPULimit uses: the limit
// holds over every period of this length, so a process limited to half a
// CPU runs at most 10 ms in every 20.
const DefaultCPUPeriod = 20 * time.Millisecond

// minCPUQuota is the kernel's smallest CFS quota (1 ms).
const minCPUQuota = time.Millisecond

// MinCPUShare is the smallest cap LimitCPU takes with DefaultCPUPeriod: the
// kernel's least quota, 1 ms, per 20 ms period.
const MinCPUShare = float64(minCPUQuota) / float64(DefaultCPUPeriod)

// MaxCPUShare bounds a cap, in CPUs: a sanity bound, far above any
// machine this runs on.
const MaxCPUShare = 1024
