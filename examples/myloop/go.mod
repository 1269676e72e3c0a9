module example.com/myloop

go 1.26.8

require (
	github.com/reactorlab/reactorlab v0.0.0
	golang.org/x/sys v0.50.0
)

require github.com/HdrHistogram/hdrhistogram-go v1.4.0 // indirect

// The reactorlab checkout this example sits in; outside it, drop the
// replace and `go get github.com/reactorlab/reactorlab@latest`.
replace github.com/reactorlab/reactorlab => ../..
