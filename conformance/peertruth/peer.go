// Package peertruth holds conformance verdicts to account on servers this
// project did not shape its cases around: each peer under examples/peers
// (a byte-echo server on a real event-loop library, correct or in a buggy
// idiom real code uses, or an independent server in another style) comes
// with a .peer file stating the true verdict of every case and why. This
// package reads those files, builds and runs a peer, and compares what the
// suite found with the truth; its test does that for every peer and fails
// on any difference, so a suite change that passes a real bug, or fails a
// correct server, is caught.
//
// A .peer file is "key: value" header lines, then one line per case:
//
//	name: libevent-free-at-eof
//	library: libevent 2.1.12-stable, bufferevents
//	idiom: the libevent book's echo: bufferevent_free at BEV_EVENT_EOF
//	needs: cmd:cc file:/usr/include/event2/bufferevent.h
//	build: cc -O2 -Wall -o {bin} free-at-eof.c -levent
//	run: exec {bin}
//	F1 pass  the input buffer is echoed whole, whatever a read brings
//	I3 fail  bufferevent_free at EOF drops the output buffer unsent
//	W4 pass|inconclusive  whether the FIN is read with echoes held is timing
//
// A verdict may be pass|inconclusive: the server is correct, and whether
// the case reaches its precondition on it depends on timing (the why says
// how); or fail|inconclusive: the server has the bug, and whether a run
// reaches the state that shows it depends on timing (never a pass). Blank lines and lines starting with # are ignored. needs lists cmd:NAME
// (a program on PATH) and file:PATH (a file that must exist); build
// (optional) and run are run by /bin/sh -c in the file's directory with
// {bin} replaced by the peer's binary path; a run with {control} serves a
// control address (conformance.Command). "stop: sigterm" holds the peer to
// the SIGTERM stop contract (conformance.Options.Stop); without it the
// contract's cases are skipped, and the file says so. "runs: ID ..." limits
// what the test runs to those cases (every case's truth is still stated,
// and REACTORLAB_PEERS_FULL=1 runs them all): for a variant of another
// peer that differs from it only there, or for a peer whose whole
// catalogue is too slow for CI, the cases that tell it apart.
package peertruth

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/conformance/cases"
)

// Expect is one case's true verdict on a peer and why it is true. Where
// the truth is "pass, or inconclusive when timing keeps the case from its
// precondition" (never a failure), or "fail, or inconclusive when timing
// keeps the case from the state that shows the bug" (never a pass),
// Verdicts holds both.
type Expect struct {
	Verdicts []conformance.Verdict
	Why      string
}

// Allows reports whether v is one of the true verdicts.
func (e Expect) Allows(v conformance.Verdict) bool { return slices.Contains(e.Verdicts, v) }

// String is the verdicts as a .peer file writes them ("pass|inconclusive").
func (e Expect) String() string {
	var vs []string
	for _, v := range e.Verdicts {
		vs = append(vs, string(v))
	}
	return strings.Join(vs, "|")
}

// Peer is one .peer file: a server, how to build and run it, and the truth
// for every case of the catalogue.
type Peer struct {
	Path    string // the .peer file
	Name    string
	Library string
	Idiom   string
	Needs   []string
	Build   string // "" when nothing is built
	Run     string
	// Stop is the stop contract the peer is held to ("stop: sigterm";
	// "": none, and the stop contract's cases are skipped).
	Stop conformance.StopContract
	// Runs, when not empty ("runs: R3 R4 M4"), are the only cases the
	// peer's test runs (unless REACTORLAB_PEERS_FULL=1): for a variant of
	// another peer that differs from it only there, or for a peer whose
	// whole catalogue is too slow for CI, the cases that tell it apart
	// (its truth for every other case still stated). Empty: the whole
	// catalogue.
	Runs  []string
	Truth map[string]Expect
}

// Dir is the directory builds and runs happen in.
func (p Peer) Dir() string { return filepath.Dir(p.Path) }

// Load reads and checks a .peer file: every header key known, name and
// run present, every line's verdict one of the four, and a truth for
// exactly the cases of the catalogue.
func Load(path string) (Peer, error) {
	f, err := os.Open(path)
	if err != nil {
		return Peer{}, err
	}
	defer f.Close()
	p, err := parse(f, path)
	if err != nil {
		return Peer{}, err
	}
	return p, nil
}

// parse reads a .peer file's text from r, path naming it in errors:
// header lines (KEY: VALUE) and case lines (ID VERDICT WHY), then checks
// that the required keys and every case's truth are there.
func parse(r io.Reader, path string) (Peer, error) {
	p := Peer{Path: path, Truth: map[string]Expect{}}
	sc := bufio.NewScanner(r)
	line := 0
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", path, line, fmt.Sprintf(format, args...))
	}
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if key, value, ok := strings.Cut(text, ":"); ok && !strings.Contains(key, " ") && strings.ToLower(key) == key {
			if err := setHeader(&p, key, strings.TrimSpace(value), bad); err != nil {
				return p, err
			}
			continue
		}
		if err := addCase(&p, text, bad); err != nil {
			return p, err
		}
	}
	if err := sc.Err(); err != nil {
		return p, fmt.Errorf("%s: %w", path, err)
	}
	if p.Name == "" || p.Run == "" {
		return p, fmt.Errorf("%s: name and run are required", path)
	}
	var missing []string
	for _, cs := range cases.Catalogue() {
		if _, ok := p.Truth[cs.ID]; !ok {
			missing = append(missing, cs.ID)
		}
	}
	if len(missing) > 0 {
		return p, fmt.Errorf("%s: no truth for case %s", path, strings.Join(missing, ", "))
	}
	return p, nil
}

// badLine makes the error of the line being parsed.
type badLine func(format string, args ...any) error

// setHeader sets p's header key to value.
func setHeader(p *Peer, key, value string, bad badLine) error {
	switch key {
	case "name":
		p.Name = value
	case "library":
		p.Library = value
	case "idiom":
		p.Idiom = value
	case "needs":
		p.Needs = strings.Fields(value)
		for _, n := range p.Needs {
			if !strings.HasPrefix(n, "cmd:") && !strings.HasPrefix(n, "file:") {
				return bad("need %q: want cmd:NAME or file:PATH", n)
			}
		}
	case "build":
		p.Build = value
	case "run":
		p.Run = value
	case "runs":
		p.Runs = strings.Fields(value)
		for _, id := range p.Runs {
			if _, ok := cases.Lookup(id); !ok {
				return bad("runs: unknown case %q", id)
			}
		}
	case "stop":
		if value != string(conformance.StopSIGTERM) {
			return bad("stop %q (accepted: sigterm)", value)
		}
		p.Stop = conformance.StopContract(value)
	default:
		return bad("unknown key %q (accepted: name, library, idiom, needs, build, run, stop, runs)", key)
	}
	return nil
}

// addCase adds to p the truth of a case line, text: a case of the catalogue,
// not stated before, its verdict one of the four or pass|inconclusive.
func addCase(p *Peer, text string, bad badLine) error {
	f := strings.Fields(text)
	if len(f) < 3 {
		return bad("%q: want a header line KEY: VALUE or a case line ID VERDICT WHY", text)
	}
	id := f[0]
	if _, ok := cases.Lookup(id); !ok {
		return bad("unknown case %q", id)
	}
	var verdicts []conformance.Verdict
	for _, v := range strings.Split(f[1], "|") {
		verdict := conformance.Verdict(v)
		if !slices.Contains([]conformance.Verdict{conformance.Pass, conformance.Fail, conformance.Skip, conformance.Inconclusive}, verdict) {
			return bad("case %s: verdict %q (accepted: pass, fail, skip, inconclusive, or pass|inconclusive)", id, v)
		}
		verdicts = append(verdicts, verdict)
	}
	if len(verdicts) > 1 && (len(verdicts) != 2 || !slices.Contains(verdicts, conformance.Inconclusive) ||
		!slices.Contains(verdicts, conformance.Pass) && !slices.Contains(verdicts, conformance.Fail)) {
		return bad("case %s: %q: the pairs of verdicts a truth may give are pass|inconclusive and fail|inconclusive", id, f[1])
	}
	if _, dup := p.Truth[id]; dup {
		return bad("case %s stated twice", id)
	}
	why := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(text, id)), f[1]))
	p.Truth[id] = Expect{Verdicts: verdicts, Why: why}
	return nil
}

// Find lists the .peer files under root, sorted.
func Find(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".peer") {
			out = append(out, path)
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

// Missing says which of the peer's needs this machine lacks ("" when
// none).
func (p Peer) Missing() string {
	var why []string
	for _, n := range p.Needs {
		if name, ok := strings.CutPrefix(n, "cmd:"); ok {
			if _, err := exec.LookPath(name); err != nil {
				why = append(why, "no "+name+" on PATH")
			}
		} else if file, ok := strings.CutPrefix(n, "file:"); ok {
			if _, err := os.Stat(file); err != nil {
				why = append(why, "no "+file)
			}
		}
	}
	return strings.Join(why, ", ")
}

// Mismatch is a case whose verdict differs from the peer's truth.
type Mismatch struct {
	ID       string
	Want     Expect
	Got      conformance.Result
	Evidence string
}

func (m Mismatch) String() string {
	return fmt.Sprintf("%s: got %s (%s: %s), truth %s (%s)", m.ID, m.Got.Verdict, m.Got.Cause, m.Got.Reason, m.Want, m.Want.Why)
}

// Compare lists the results whose verdict is not the truth's.
func (p Peer) Compare(results []conformance.Result) []Mismatch {
	var out []Mismatch
	for _, r := range results {
		want, ok := p.Truth[r.ID]
		if ok && want.Allows(r.Verdict) {
			continue
		}
		out = append(out, Mismatch{ID: r.ID, Want: want, Got: r, Evidence: strings.Join(r.Evidence, "\n")})
	}
	return out
}
