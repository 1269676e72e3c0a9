package stats

// Sample is one logged observation: a value (a latency in ns, or a
// source's index) at a time (ns on the recording side's clock).
type Sample struct {
	At    int64
	Value int64
}
