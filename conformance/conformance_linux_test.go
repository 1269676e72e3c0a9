//go:build linux

package conformance_test

import (
	"testing"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/reactors/designs"
)

func TestInProcessReference(t *testing.T) {
	for _, d := range designs.Names() {
		t.Run(string(d), func(t *testing.T) {
			conformance.Run(t, conformance.InProcess{Design: d}, conformance.Options{Strict: true})
		})
	}
}
