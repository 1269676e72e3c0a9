// Package roles holds the serve and loadgen commands: the reference
// reactor and the load generator as processes of this program, which a
// cell starts in the lab as lab.RolePrefix+Serve and lab.RolePrefix+Loadgen
// and the CLI runs as `reactorlab serve` and `reactorlab loadgen`.
//
// Both register themselves with lab.RegisterRole from init, so every
// binary that imports this package (the CLI, and through package harness
// every test binary that runs a cell) can play them once main or TestMain
// has called lab.RunRoleIfChild. ServeOutput is what serve prints and the
// cell reads back; CheckServe and CheckLoad say, in the commands' words,
// what they would refuse, so that a caller can refuse first.
package roles
