package lab

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
)

// RoleEnv names the role a re-executed child of this program plays.
const RoleEnv = "REACTORLAB_ROLE"

// RolePrefix marks Proc.Argv[0] as a role of this program rather than a
// command: "@serve" runs /proc/self/exe as the role "serve".
const RolePrefix = "@"

// selfExe is the program itself, as the kernel knows it: it names the
// running binary even if its file was renamed or replaced meanwhile, and
// inside the lab (whose /proc is its own) it still names the same binary.
const selfExe = "/proc/self/exe"

// exitRoleUsage is the exit code of a child whose role is not registered.
const exitRoleUsage = 2

var roles struct {
	mu sync.Mutex
	m  map[string]func(args []string) int
}

// RegisterRole makes main the role called name: a child started with
// REACTORLAB_ROLE=name runs main(os.Args[1:]) from RunRoleIfChild and exits
// with its result. Register roles from init functions, so every role exists
// before main calls RunRoleIfChild. Like sql.Register, it panics on an
// empty name, a name with a space, a nil main or a name registered twice:
// those are mistakes in the program, not input.
func RegisterRole(name string, main func(args []string) int) {
	if name == "" || strings.ContainsAny(name, " \t\n=") || main == nil {
		panic(fmt.Sprintf("lab: RegisterRole(%q): empty or malformed name, or nil main", name))
	}
	roles.mu.Lock()
	defer roles.mu.Unlock()
	if roles.m == nil {
		roles.m = map[string]func([]string) int{}
	}
	if _, dup := roles.m[name]; dup {
		panic(fmt.Sprintf("lab: role %q registered twice", name))
	}
	roles.m[name] = main
}

// role returns the registered role called name, or nil.
func role(name string) func([]string) int {
	roles.mu.Lock()
	defer roles.mu.Unlock()
	return roles.m[name]
}

// Roles lists the registered roles, sorted.
func Roles() []string {
	roles.mu.Lock()
	defer roles.mu.Unlock()
	names := make([]string, 0, len(roles.m))
	for n := range roles.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// RunRoleIfChild returns at once unless REACTORLAB_ROLE names a role. If it
// does, it removes REACTORLAB_ROLE from the environment (so the role's own
// children do not inherit it), runs the role with os.Args[1:] and exits the
// process with the role's result; for an unregistered role it prints the
// registered ones to stderr and exits with status 2. Call it first thing in
// main, and in TestMain before m.Run, so that a re-executed child never runs
// the program's normal main (or the tests).
func RunRoleIfChild() {
	name, ok := os.LookupEnv(RoleEnv)
	if !ok {
		return
	}
	os.Unsetenv(RoleEnv)
	if name == "" {
		return
	}
	main := role(name)
	if main == nil {
		fmt.Fprintf(os.Stderr, "reactorlab: %s=%q names no role (registered: %s)\n",
			RoleEnv, name, strings.Join(Roles(), ", "))
		os.Exit(exitRoleUsage)
	}
	os.Exit(main(os.Args[1:]))
}
