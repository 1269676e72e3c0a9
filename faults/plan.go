package faults

import (
	"strconv"
	"time"
)

// Op is what one Step of a send plan does.
type Op uint8

// The operations of a send plan.
const (
	OpWrite        Op = iota + 1 // write Data (all of it; a short write is retried by Play)
	OpSleep                      // wait For
	OpPauseReading               // stop reading for For, then resume (reading is the Link's business; Play returns at once)
	OpCloseWrite                 // shut down the writing half (FIN), keep reading
	OpClose                      // close the connection
	OpReset                      // close with RST (SO_LINGER 0)
	OpReconnect                  // dial a new connection to the same address (closing the old one first if still open)
)

var opNames = [...]string{
	OpWrite:        "write",
	OpSleep:        "sleep",
	OpPauseReading: "pause-reading",
	OpCloseWrite:   "close-write",
	OpClose:        "close",
	OpReset:        "reset",
	OpReconnect:    "reconnect",
}

// String returns the op's name ("write", "pause-reading", …), or "Op(n)" for an
// undefined value.
func (o Op) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// Step is one action of a client's send plan.
type Step struct {
	Op   Op
	Data []byte        // OpWrite
	For  time.Duration // OpSleep, OpPauseReading
}

// String describes the step for evidence: "write(32 bytes)", "sleep(1ms)",
// "close".
func (s Step) String() string {
	switch s.Op {
	case OpWrite:
		return "write(" + strconv.Itoa(len(s.Data)) + " bytes)"
	case OpSleep, OpPauseReading:
		return s.Op.String() + "(" + s.For.String() + ")"
	}
	return s.Op.String()
}

// Writes returns a plan of one OpWrite per frame, in order. The steps share the
// frames' bytes.
func Writes(frames ...[]byte) []Step {
	plan := make([]Step, len(frames))
	for i, f := range frames {
		plan[i] = Step{Op: OpWrite, Data: f}
	}
	return plan
}
