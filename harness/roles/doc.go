// Package roles holds the serve and loadgen commands: the reference
// reactor and the load generator as processes of this program, which a
// cell starts as lab.RolePrefix+Serve and lab.RolePrefix+Loadgen and the
// CLI runs as `reactorlab serve` and `reactorlab loadgen`.
package roles
