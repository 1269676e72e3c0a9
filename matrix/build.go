package matrix

import (
	"fmt"

	"github.com/reactorlab/reactorlab/results"
)

// otherBuild says how build b differs from the one that made a run, a;
// "" when they are the same build: the same executable (SHA-256), or else
// the same clean commit, version and Go. Without a commit, or with local
// changes, only the executable itself names the build.
func otherBuild(a, b results.Tool) string {
	describe := func(t results.Tool) string {
		s := fmt.Sprintf("version %s, commit %s", t.Version, orDefault(t.Commit, "unknown"))
		if t.Modified {
			s += " with local changes"
		}
		s += ", " + t.Go
		if t.Executable != "" {
			s += ", executable sha256 " + t.Executable[:min(12, len(t.Executable))]
		}
		return s
	}
	// The same executable is the same build, whatever git said of the
	// working tree when each ran (a build that stamped no revision reads
	// it from the checkout, where an edit to a document changes Modified).
	if a.Executable != "" && a.Executable == b.Executable {
		return ""
	}
	same := a.Version == b.Version && a.Commit == b.Commit && a.Modified == b.Modified && a.Go == b.Go
	if same && (a.Commit == "" || a.Modified) {
		same = a.Executable != "" && a.Executable == b.Executable
	}
	if same {
		return ""
	}
	return fmt.Sprintf("%s; this one is %s", describe(a), describe(b))
}
