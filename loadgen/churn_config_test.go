package loadgen_test

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/loadgen"
)

// TestValidateChurnAndLead: the churn's and the hot lead's refusals name
// the field and what is accepted; a churn-only run is valid.
func TestValidateChurnAndLead(t *testing.T) {
	churnOnly := loadgen.Config{DataAddr: "127.0.0.1:7070", ChurnRate: 1000, Duration: time.Second}
	if err := churnOnly.Validate(); err != nil {
		t.Fatalf("churn-only config refused: %v", err)
	}
	if err := (loadgen.Config{DataAddr: "127.0.0.1:7070", ChurnRate: 1000, ChurnMax: 8, Loops: 8, Duration: time.Second}).Validate(); err != nil {
		t.Fatalf("churn over 8 loops with churn-max 8 refused: %v", err)
	}
	cases := []struct {
		name string
		edit func(*loadgen.Config)
		want []string
	}{
		{"NaN churn rate", func(c *loadgen.Config) { c.ChurnRate = math.NaN() }, []string{"churn-rate = NaN", "(0, 100000]"}},
		{"churn rate too high", func(c *loadgen.Config) { c.ChurnRate = 2e5 }, []string{"churn-rate = 200000"}},
		{"negative churn rate", func(c *loadgen.Config) { c.ChurnRate = -1 }, []string{"churn-rate = -1"}},
		{"burst without churn", func(c *loadgen.Config) { c.ChurnBurst = 4 }, []string{"churn-burst = 4", "0 without churn-rate"}},
		{"cap without churn", func(c *loadgen.Config) { c.ChurnMax = 4 }, []string{"churn-max = 4", "0 without churn-rate"}},
		{"huge burst", func(c *loadgen.Config) { c.ChurnRate, c.ChurnBurst = 100, 20000 }, []string{"churn-burst = 20000", "1..10000"}},
		{"negative burst", func(c *loadgen.Config) { c.ChurnRate, c.ChurnBurst = 100, -1 }, []string{"churn-burst = -1"}},
		{"cap below burst", func(c *loadgen.Config) { c.ChurnRate, c.ChurnBurst, c.ChurnMax = 100, 8, 4 }, []string{"churn-max = 4", ">= churn-burst = 8"}},
		{"cap below loops", func(c *loadgen.Config) { c.Hot, c.ChurnRate, c.ChurnMax, c.Loops = 4, 100, 2, 4 }, []string{"churn-max = 2", ">= loops = 4"}},
		{"huge cap", func(c *loadgen.Config) { c.ChurnRate, c.ChurnMax = 100, 1<<20 }, []string{"churn-max = 1048576", "1..65536"}},
		{"cap too many bytes", func(c *loadgen.Config) { c.ChurnRate, c.ChurnMax, c.Payload = 100, 65536, 4096 }, []string{"churn-max = 65536", "MiB"}},
		{"lead too long", func(c *loadgen.Config) { c.HotLead = time.Minute }, []string{"hot-lead = 1m0s", "(0, 10s]"}},
		{"negative lead", func(c *loadgen.Config) { c.HotLead = -time.Second }, []string{"hot-lead = -1s"}},
		{"lead without hot", func(c *loadgen.Config) { c.Hot, c.ChurnRate, c.HotLead = 0, 100, time.Second }, []string{"hot-lead = 1s without hot sources"}},
	}
	for _, tc := range cases {
		c := validConfig()
		tc.edit(&c)
		err := c.Validate()
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", tc.name, err, w)
			}
		}
	}
}

// TestChurnConfigJSON: the new fields round-trip, a zero one is left
// out, and the defaults and the run's bound take them into account.
func TestChurnConfigJSON(t *testing.T) {
	c := validConfig()
	c.ChurnRate, c.ChurnBurst, c.ChurnMax, c.HotLead = 2000, 4, 64, 1500*time.Millisecond
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"churn_rate":2000`, `"churn_burst":4`, `"churn_max":64`, `"hot_lead":"1.5s"`} {
		if !strings.Contains(string(b), w) {
			t.Errorf("%s lacks %s", b, w)
		}
	}
	var back loadgen.Config
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, c) {
		t.Errorf("round trip: %+v, want %+v", back, c)
	}
	plain, _ := json.Marshal(validConfig())
	if strings.Contains(string(plain), "churn") || strings.Contains(string(plain), "hot_lead") {
		t.Errorf("zero churn and lead in the JSON: %s", plain)
	}
	if d := (loadgen.Config{ChurnRate: 10}).WithDefaults(); d.ChurnBurst != 1 || d.ChurnMax != loadgen.DefaultChurnMax {
		t.Errorf("churn defaults: burst %d, max %d", d.ChurnBurst, d.ChurnMax)
	}
	if d := validConfig().WithDefaults(); d.ChurnBurst != 0 || d.ChurnMax != 0 {
		t.Errorf("churn defaults without churn: burst %d, max %d", d.ChurnBurst, d.ChurnMax)
	}
	base := validConfig()
	lead := base
	lead.HotLead = time.Second
	if got, want := lead.MaxDuration()-base.MaxDuration(), time.Second+loadgen.DefaultConnectTimeout; got != want {
		t.Errorf("a 1 s lead adds %v to the bound, want the lead and a second connect timeout, %v", got, want)
	}
}
