package inetdiag

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

// TestStatesByName: every state of include/net/tcp_states.h is shown by
// its kernel name, a socket printed with %v included, never as a bare
// number; a number the table does not know says so.
func TestStatesByName(t *testing.T) {
	for state, want := range map[uint8]string{
		Established: "ESTABLISHED", SynSent: "SYN_SENT", SynRecv: "SYN_RECV", FinWait1: "FIN_WAIT1", FinWait2: "FIN_WAIT2",
		TimeWait: "TIME_WAIT", Close: "CLOSE", CloseWait: "CLOSE_WAIT", LastAck: "LAST_ACK", Listen: "LISTEN", Closing: "CLOSING",
		12: "NEW_SYN_RECV", 13: "BOUND_INACTIVE",
	} {
		if got := StateName(state); got != want {
			t.Errorf("StateName(%d) = %q, want %q", state, got, want)
		}
		s := Socket{Family: 2, State: state, Local: netip.MustParseAddrPort("127.0.0.1:40000"), Remote: netip.MustParseAddrPort("127.0.0.1:5000"), Unread: 7}
		if got := fmt.Sprint(s); !strings.Contains(got, " "+want+",") || !strings.Contains(got, "127.0.0.1:40000") {
			t.Errorf("socket in state %d printed %q, want its state named %s", state, got, want)
		}
	}
	if got := StateName(99); got != "TCP state 99 (unknown)" {
		t.Errorf("StateName(99) = %q", got)
	}
}
