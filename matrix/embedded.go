package matrix

import (
	"embed"
	"fmt"
	"strings"
)

//go:embed specs/*.yaml
var specFiles embed.FS

// Embedded is a suite built into the tool: one or more spec files joined.
type Embedded struct {
	Name    string
	Summary string
	files   []string
}

// DefaultSuite is the embedded suite `reactorlab matrix` runs when given
// none.
const DefaultSuite = "quick"

// embedded is the catalogue, in the order --list prints it.
var embedded = []Embedded{
	{Name: "quick", Summary: "the default: the reference reactors side by side and 1 vs 4 hot sources",
		files: []string{"quick.yaml"}},
	{Name: "design-notes", Summary: "the four comparisons the design began with: 1 vs 8 hot sources, fast vs slow callback (inline, offloaded), LT vs ET, periodic vs deadline timer",
		files: []string{"design-notes.yaml"}},
	{Name: "priority", Summary: "the priority split's table under saturating data: flat lt, prio, prio-thread, prio-thread with a SCHED_FIFO control thread, lt with admission limiting, prio with urgent data; probes every 10 ms and every 100 ms",
		files: []string{"priority.yaml"}},
	{Name: "peers", Summary: "lt, et, prio-thread beside gnet, netpoll and stdlib servers (build examples/peers first): ping-pong on 1 and 64 connections, pipelined, hot + control",
		files: []string{"peers.yaml"}},
	{Name: "peers-capacity", Summary: "peers' pipelined cell with every server capped at half a CPU (cgroup quota; needs root), so the server, not the load generator, is the limit",
		files: []string{"peers-capacity.yaml"}},
	{Name: "scaling", Summary: "several CPUs per side (needs 8 CPUs; refused on fewer): lt and prio-thread, pipelined with control probes, on 4 CPUs a side vs one each, and one load generator loop vs one per CPU",
		files: []string{"scaling.yaml"}},
	{Name: "nightly", Summary: "design-notes + priority + every reactor kind, input budgets 8/32/64 and the wire faults; run sharded in CI",
		files: []string{"design-notes.yaml", "priority.yaml", "nightly-extra.yaml"}},
	{Name: "multiloop", Summary: "several loops in one server (they share the server's CPU on 2 cores): accept bursts on shared with and without EPOLLEXCLUSIVE, mainsub and reuseport; mainsub's assignment under uneven load; Cloudflare's shared listener against reuseport",
		files: []string{"multiloop.yaml"}},
	{Name: "proactor", Summary: "the completion model beside the readiness one: lt against uring, ping-pong and pipelined at 1, 50, 300 and 1,000 connections, open-loop latency at two rates below saturation; the multi-loop pair, reuseport against uring-reuseport at 300; throughput, latency, CPU, context switches and wait calls per frame",
		files: []string{"proactor.yaml"}},
}

// EmbeddedSuites lists the built-in suites.
func EmbeddedSuites() []Embedded { return append([]Embedded(nil), embedded...) }

// EmbeddedText returns the YAML of the built-in suite name: its spec files
// joined as documents of one stream.
func EmbeddedText(name string) (string, error) {
	var names []string
	for _, e := range embedded {
		names = append(names, e.Name)
		if e.Name != name {
			continue
		}
		var docs []string
		for _, f := range e.files {
			b, err := specFiles.ReadFile("specs/" + f)
			if err != nil {
				return "", fmt.Errorf("matrix: embedded %s: %w", f, err)
			}
			docs = append(docs, strings.TrimRight(string(b), "\n")+"\n")
		}
		return strings.Join(docs, "---\n"), nil
	}
	return "", fmt.Errorf("matrix: no embedded suite %q (accepted: %s)", name, strings.Join(names, ", "))
}
