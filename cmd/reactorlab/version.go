package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/reactorlab/reactorlab/internal/cli"
)

// buildVersion is what this binary's build recorded of itself.
type buildVersion struct {
	Module   string `json:"module"`
	Version  string `json:"version"`            // "(devel)" for a build from a checkout
	Revision string `json:"revision,omitempty"` // the VCS commit, when the build stamped one
	Time     string `json:"time,omitempty"`     // the commit's time
	Modified *bool  `json:"modified,omitempty"` // the working tree had uncommitted changes; absent when the build stamped no VCS state
	Go       string `json:"go"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
}

// readBuildVersion reads the build information the Go toolchain stamped
// into this binary. `go build` and `go install` in a checkout stamp the VCS
// revision; `go run` and `go test` do not, and a binary says so rather than
// guess.
func readBuildVersion() buildVersion {
	v := buildVersion{Module: "github.com/reactorlab/reactorlab", Version: "(unknown)", Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Path != "" {
		v.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			modified := s.Value == "true"
			v.Modified = &modified
		}
	}
	return v
}

// String is the one-line form: module version, revision, Go version.
func (v buildVersion) String() string {
	rev := "revision unknown (the build stamped none: go run, go test and -buildvcs=false do not)"
	if v.Revision != "" {
		rev = "revision " + v.Revision
		if v.Time != "" {
			rev += " (" + v.Time + ")"
		}
		if v.Modified != nil && *v.Modified {
			rev += " with uncommitted changes"
		}
	}
	return fmt.Sprintf("reactorlab %s, %s, %s %s/%s", v.Version, rev, v.Go, v.OS, v.Arch)
}

// versionCmd is `reactorlab version` (and `reactorlab --version`).
func versionCmd(args []string, stdout, stderr io.Writer) int {
	c := cli.New("reactorlab version", "reactorlab version [--json FILE|-]\nreactorlab --version",
		"Prints the module version, the VCS revision the build stamped (go build and\n"+
			"go install in a checkout stamp it; go run, go test and -buildvcs=false do\n"+
			"not) and the Go version, on one line; --json writes them as one JSON object.")
	jsonOut := c.Flags.String("json", "", "write one JSON object (module, version, revision, time, modified, go, os, arch) to `FILE`; - writes it alone on stdout instead of the line")
	if done, code := c.ParseNoArgs(args, stdout, stderr); done {
		return code
	}
	v := readBuildVersion()
	if *jsonOut != "" {
		err := cli.WriteTo(*jsonOut, stdout, func(w io.Writer) error {
			b, err := json.Marshal(v)
			if err == nil {
				_, err = fmt.Fprintf(w, "%s\n", b)
			}
			return err
		})
		if err != nil {
			return c.Errorf(stderr, cli.ExitFail, "--json: %v", err)
		}
		if *jsonOut == cli.StdoutPath {
			return 0
		}
	}
	fmt.Fprintln(stdout, v)
	return 0
}
