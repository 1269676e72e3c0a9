package harness

// ExitUsage is the exit code of a role or command refused for bad flags or
// arguments; the reason is on stderr.
const ExitUsage = 2
