//go:build linux

package harness

import (
	"slices"
	"testing"
)

func TestShellArgv(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		want string // the -c argument
	}{
		{"./peers/gnet", "exec ./peers/gnet"},
		{"./myserver --listen {addr} --threads 2", "exec ./myserver --listen {addr} --threads 2"},
		{"/usr/bin/nginx -c /etc/nginx.conf", "exec /usr/bin/nginx -c /etc/nginx.conf"},
		// Compound commands keep the shell: exec would change their meaning.
		{"cd srv && ./server", "cd srv && ./server"},
		{"PORT=1 ./server", "PORT=1 ./server"},
		{"./server > log", "./server > log"},
		{"./server $ARGS", "./server $ARGS"},
		{"'./my server'", "'./my server'"},
		{"exec ./server", "exec ./server"},
		{"./a; ./b", "./a; ./b"},
	} {
		got := ShellArgv(c.cmd)
		if !slices.Equal(got, []string{"/bin/sh", "-c", c.want}) {
			t.Errorf("ShellArgv(%q) = %q, want /bin/sh -c %q", c.cmd, got, c.want)
		}
	}
}
