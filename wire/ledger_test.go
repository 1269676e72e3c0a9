package wire

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestLedgerRoundTrip(t *testing.T) {
	for _, l := range []Ledger{
		{},
		{Accepted: 10, Completed: 7, Rejected: 3},
		{Accepted: math.MaxUint64, Completed: math.MaxUint64, Rejected: 0},
	} {
		b := EncodeLedger(l)
		got, err := DecodeLedger(b)
		if err != nil || got != l {
			t.Errorf("DecodeLedger(%s) = %+v, %v; want %+v", b, got, err, l)
		}
		var std Ledger // the JSON tags agree with the hand-written encoder
		if err := json.Unmarshal(b, &std); err != nil || std != l {
			t.Errorf("json.Unmarshal(%s) = %+v, %v", b, std, err)
		}
	}
	if got, want := string(EncodeLedger(Ledger{1, 2, 3})), `{"accepted":1,"completed":2,"rejected":3}`; got != want {
		t.Errorf("EncodeLedger = %s, want %s", got, want)
	}
}

func TestLedgerBalanced(t *testing.T) {
	for _, tc := range []struct {
		l    Ledger
		want bool
	}{
		{Ledger{}, true},
		{Ledger{10, 7, 3}, true},
		{Ledger{10, 7, 2}, false},
		{Ledger{10, 11, 0}, false},
		{Ledger{1, math.MaxUint64, 2}, false}, // Completed+Rejected wraps to 1
		{Ledger{math.MaxUint64, math.MaxUint64 - 1, 1}, true},
	} {
		if got := tc.l.Balanced(); got != tc.want {
			t.Errorf("%+v.Balanced() = %v, want %v", tc.l, got, tc.want)
		}
	}
}

func TestDecodeLedger(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    Ledger
		mention string // empty: must succeed
	}{
		{"extra fields ignored", `{"accepted":3,"completed":2,"rejected":1,"reactor":"lt","stale":9}`, Ledger{3, 2, 1}, ""},
		{"any order", `{"rejected":1,"accepted":3,"completed":2}`, Ledger{3, 2, 1}, ""},
		{"missing accepted", `{"completed":2,"rejected":1}`, Ledger{}, `"accepted"`},
		{"missing completed", `{"accepted":3,"rejected":1}`, Ledger{}, `"completed"`},
		{"missing rejected", `{"accepted":3,"completed":2}`, Ledger{}, `"rejected"`},
		{"wrong case is missing", `{"Accepted":3,"completed":2,"rejected":1}`, Ledger{}, `"accepted"`},
		{"null field", `{"accepted":null,"completed":2,"rejected":1}`, Ledger{}, `"accepted"`},
		{"negative", `{"accepted":3,"completed":-2,"rejected":1}`, Ledger{}, `"completed"`},
		{"fraction", `{"accepted":3,"completed":2,"rejected":1.5}`, Ledger{}, `"rejected"`},
		{"string value", `{"accepted":"3","completed":2,"rejected":1}`, Ledger{}, `"accepted"`},
		{"not an object", `[1,2,3]`, Ledger{}, "ledger"},
		{"null", `null`, Ledger{}, "null"},
		{"empty", ``, Ledger{}, "ledger"},
		{"truncated", `{"accepted":3,`, Ledger{}, "ledger"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeLedger([]byte(tc.in))
			if tc.mention == "" {
				if err != nil || got != tc.want {
					t.Fatalf("DecodeLedger = %+v, %v; want %+v", got, err, tc.want)
				}
				return
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("DecodeLedger error = %v, want ErrMalformed", err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %s", err, tc.mention)
			}
		})
	}
}
