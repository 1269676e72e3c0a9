package cases

import (
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
)

// offloaded makes the reference reactor run callbacks on two workers at
// a cost, so results are in flight when their connection goes away.
// A design that takes no pool (oneshot: its worker threads run callbacks
// themselves) gets the cost only.
func offloaded(cost string) func(reactors.DesignName, *reactors.Config) {
	return func(d reactors.DesignName, cfg *reactors.Config) {
		withPool(d, cfg, 2)
		cfg.Callback = cost
	}
}

// withPool gives cfg an offload pool of n workers if design d takes one
// (its Check accepts it); otherwise cfg is left as it is.
func withPool(d reactors.DesignName, cfg *reactors.Config, n int) {
	b, err := designs.Lookup(d)
	if err != nil {
		return
	}
	pooled := *cfg
	pooled.Workers = n
	if b.Check(pooled) == nil {
		cfg.Workers = n
	}
}

// takes reports whether design d accepts cfg as tweak changes it (its
// Check): a tweak for one kind of design leaves the others as they are.
func takes(d reactors.DesignName, cfg reactors.Config, tweak func(*reactors.Config)) (reactors.Config, bool) {
	b, err := designs.Lookup(d)
	if err != nil {
		return cfg, false
	}
	tweak(&cfg)
	return cfg, b.Check(cfg) == nil
}

// withLoops gives cfg n data loops if design d runs several; a one-loop
// design is left as it is.
func withLoops(d reactors.DesignName, cfg *reactors.Config, n int) bool {
	next, ok := takes(d, *cfg, func(c *reactors.Config) { c.Loops = n })
	if ok {
		*cfg = next
	}
	return ok
}

// twoDataLoops gives a multi-loop design two data loops, whatever the
// machine's CPU count (the default is one a CPU).
func twoDataLoops(d reactors.DesignName, cfg *reactors.Config) { withLoops(d, cfg, 2) }
