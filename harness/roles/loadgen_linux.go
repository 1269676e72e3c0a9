//go:build linux

package roles

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/internal/cli"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
)

// Loadgen is the name the loadgen role is registered under: a cell's load
// generator is this program as LoadgenMain, started as
// lab.RolePrefix+Loadgen.
const Loadgen = "loadgen"

func init() {
	lab.RegisterRole(Loadgen, func(args []string) int { return LoadgenMain(args, os.Stdout, os.Stderr) })
}

const loadgenSynopsis = `reactorlab loadgen --config FILE --out DIR [--data ADDR] [--control ADDR] [--loops N] [--loop-cpus LIST] [--progress FILE]`

const loadgenDescription = `Runs the load generator alone, as reactorlab run places it in the lab:
the load FILE describes (JSON, as run writes it to loadgen-config.json),
against the target's addresses (--data and --control, or the file's), on
--loops event loops pinned round-robin to --loop-cpus (or the file's).
It writes loadgen.hlog (an HdrHistogram interval log) and loadgen.json
(its summary) into DIR, appends a JSON line per progress report to
--progress, and prints the summary as one JSON line on stdout. SIGINT
or SIGTERM stops it early, with what was measured. Exit 0 when a
measurement was made (valid or not: the summary says), 1 when none
could be, 2 for bad flags or a configuration it refuses (nothing was
sent), 130 when interrupted.`

// LoadgenMain is `reactorlab loadgen` and the "loadgen" role: it runs the
// load generator with the configuration file it is given (--config, JSON
// as loadgen.Config marshals it), the target's addresses (--data,
// --control) overriding the file's, writes loadgen.hlog and loadgen.json
// into --out, appends one JSON line per progress report to --progress (if
// given), and prints the summary as one JSON line on stdout. It stops
// early, with what was measured, on SIGTERM or SIGINT. It returns 0 when a
// measurement was made (valid or not: the summary says), 1 when none could
// be, cli.ExitUsage for bad flags or a configuration it refuses (on stderr, in
// the words of CheckLoad after the file's name, with a pointer to --help;
// nothing was started), cli.ExitInterrupted when a signal cut the run
// short (after writing what was measured). --help prints the help on
// stdout and returns 0.
func LoadgenMain(args []string, stdout, stderr io.Writer) int {
	c := cli.New("reactorlab loadgen", loadgenSynopsis, loadgenDescription)
	fs := c.Flags
	cfgPath := fs.String("config", "", "the load to send: a JSON `file`, as run writes loadgen-config.json (required)")
	data := fs.String("data", "", "the target's data `address`, host:port (overrides the file's)")
	control := fs.String("control", "", "the target's control `address`, host:port (overrides the file's)")
	out := fs.String("out", "", "`directory` for loadgen.hlog and loadgen.json, which must exist (required)")
	progressPath := fs.String("progress", "", "append a JSON line per progress report to this `file`")
	loops := fs.Int("loops", 0, "event loops, each on its own thread (overrides the file's; 0: the file's, or 1)")
	var loopCPUs []int
	fs.Func("loop-cpus", "pin loop i's thread to the i-th CPU of this `list` (0-3,8), round-robin (overrides the file's; neither: not pinned)", func(s string) error {
		cpus, err := reactors.ParseCPUList(s)
		loopCPUs = cpus
		return err
	})
	if done, code := c.ParseNoArgs(args, stdout, stderr); done {
		return code
	}
	if *cfgPath == "" || *out == "" {
		return c.Usagef(stderr, "--config and --out are required")
	}
	raw, err := os.ReadFile(*cfgPath)
	if err != nil {
		return c.Usagef(stderr, "--config: %v", err)
	}
	var cfg loadgen.Config
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&cfg); err != nil {
		return c.Usagef(stderr, "%s: %v", *cfgPath, err)
	}
	if *data != "" {
		cfg.DataAddr = *data
	}
	if *control != "" {
		cfg.ControlAddr = *control
	}
	if *loops > 0 {
		cfg.Loops = *loops
	}
	if len(loopCPUs) > 0 {
		cfg.LoopCPUs = loopCPUs
	}
	if err := loadError(cfg.WithDefaults().Validate()); err != nil {
		return c.Usagef(stderr, "%s: %v", *cfgPath, err)
	}
	if *progressPath != "" {
		f, err := os.OpenFile(*progressPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return c.Errorf(stderr, cli.ExitFail, "%v", err)
		}
		defer f.Close()
		cfg.Progress = func(p loadgen.Progress) {
			if line, err := json.Marshal(p); err == nil {
				f.Write(append(line, '\n'))
			}
		}
	}
	// Each of the generator's loops is a locked thread; its progress
	// reports and signal handling need a P of their own, pinned or not
	// (see serve): loops + 1.
	if need := cfg.WithDefaults().Loops + 1; runtime.GOMAXPROCS(0) < need {
		runtime.GOMAXPROCS(need)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	res, err := loadgen.Run(ctx, cfg)
	if err != nil {
		return c.Errorf(stderr, cli.ExitFail, "%v", err)
	}
	if err := res.WriteFiles(*out); err != nil {
		return c.Errorf(stderr, cli.ExitFail, "%v", err)
	}
	line, err := json.Marshal(res.Summary())
	if err != nil {
		return c.Errorf(stderr, cli.ExitFail, "summary: %v", err)
	}
	fmt.Fprintf(stdout, "%s\n", line)
	if res.Interrupted {
		return cli.ExitInterrupted
	}
	return 0
}
