//go:build linux

package timers_test

import (
	"fmt"

	"github.com/reactorlab/reactorlab/reactors/timers"
)

// The continue-scheduling rule: a callback that reschedules its timer at now does
// not make Expire loop; the new timer runs in the next call.
func ExampleSet_Expire() {
	s, err := timers.New(timers.Deadline, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	const now = 1_000
	s.Schedule(timers.Timer{Due: now - 10, Kind: 1, Arg: 7})
	s.Schedule(timers.Timer{Due: now, Kind: 2})
	s.Schedule(timers.Timer{Due: now + 10, Kind: 3}) // not due yet

	run := func(t timers.Timer) {
		fmt.Printf("kind %d arg %d\n", t.Kind, t.Arg)
		if t.Kind == 1 && t.Arg < 9 { // bounded, so a broken rule fails instead of hanging
			s.Schedule(timers.Timer{Due: now, Kind: 1, Arg: t.Arg + 1})
		}
	}
	fmt.Println("ran", s.Expire(now, run))
	fmt.Println("ran", s.Expire(now, run))
	due, _ := s.Next()
	fmt.Println("left", s.Len(), "next due", due)
	// Output:
	// kind 1 arg 7
	// kind 2 arg 0
	// ran 2
	// kind 1 arg 8
	// ran 1
	// left 2 next due 1000
}
