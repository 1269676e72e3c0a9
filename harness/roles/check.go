package roles

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
)

// checkError is a refusal in the words of a role's usage error, wrapping
// the error it rewords.
type checkError struct {
	msg string
	err error
}

func (e *checkError) Error() string { return e.msg }
func (e *checkError) Unwrap() error { return e.err }

// CheckServe reports what the serve role (ServeMain) would refuse of
// design with cfg before it starts anything (designs.ValidateFor),
// in the words of serve's usage error: the flag named with two dashes
// ("--budget-input = 0 (accepted: 1..1048576)"). The error wraps
// reactors.ErrConfig. ServeMain prints exactly this message, so a caller
// that checks first refuses with the message the child would give.
func CheckServe(design reactors.DesignName, cfg reactors.Config) error {
	err := designs.ValidateFor(design, cfg)
	if err == nil {
		return nil
	}
	return &checkError{msg: serveMessage(err), err: err}
}

// serveMessage rewords a reactors.ErrConfig error as a flag's error
// ("--budget-input = 0 (...)"); another error is left as it is.
func serveMessage(err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, reactors.ErrConfig.Error()+": "); ok && errors.Is(err, reactors.ErrConfig) {
		return "--" + rest
	}
	return msg
}

// loadField is how loadgen.Config.Validate begins a problem of one field:
// its reactorlab run flag name and " = " or ": ".
var loadField = regexp.MustCompile(`^[a-z][a-z-]*(?: = |: )`)

// CheckLoad reports what the loadgen role (LoadgenMain) would refuse of
// cfg, its addresses aside (any well-formed ones stand in: the real ones
// exist only once the server does): every problem loadgen.Config.Validate
// finds, in one line, each field named as its reactorlab run flag
// ("--inflight = 0 (accepted: ...); --rate = 0: ..."). The error wraps
// loadgen.ErrConfig. LoadgenMain prints the same words, after the
// configuration file's name. A valid cfg on the uring engine is then
// refused where io_uring cannot run here, with loadgen.EngineAvailable's
// errno and hint (that error wraps the system call's, not ErrConfig).
func CheckLoad(cfg loadgen.Config) error {
	if cfg.DataAddr == "" || strings.Contains(cfg.DataAddr, "{") {
		cfg.DataAddr = "127.0.0.1:1"
	}
	if strings.Contains(cfg.ControlAddr, "{") {
		cfg.ControlAddr = "127.0.0.1:1"
	}
	cfg = cfg.WithDefaults()
	if err := loadError(cfg.Validate()); err != nil {
		return err
	}
	if err := loadgen.EngineAvailable(cfg.Engine); err != nil {
		return &checkError{msg: fmt.Sprintf("--loadgen-engine %s: %v", cfg.Engine, err), err: err}
	}
	return nil
}

// loadError rewords loadgen.Config.Validate's joined errors as one line.
func loadError(err error) error {
	if err == nil {
		return nil
	}
	var parts []string
	for _, line := range strings.Split(err.Error(), "\n") {
		line = strings.TrimPrefix(line, loadgen.ErrConfig.Error()+": ")
		if rest, ok := strings.CutPrefix(line, "loops "); ok { // run's --loadgen-loops
			line = "loadgen-loops " + rest
		}
		// The addresses are loadgen's --data and --control, no run flag.
		if loadField.MatchString(line) && !strings.HasPrefix(line, "addr ") && !strings.HasPrefix(line, "control-addr ") {
			line = "--" + line
		}
		parts = append(parts, line)
	}
	return &checkError{msg: strings.Join(parts, "; "), err: err}
}
