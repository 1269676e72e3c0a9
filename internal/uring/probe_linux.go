//go:build linux

package uring

import (
	"fmt"
	"runtime"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Probe is what the kernel offers io_uring users, in a form a run's manifest
// records as JSON: the kernel release, the setup a ring got (flags granted and
// degraded), the features setup reported, and the opcodes
// IORING_REGISTER_PROBE lists as supported, each by name (io_uring.h's without
// the prefix; one unknown to this layer as "op<N>", a feature bit as "bit<N>").
type Probe struct {
	Kernel   string   `json:"kernel"`
	Setup    Setup    `json:"setup"`
	Features []string `json:"features"`
	// LastOp is the highest opcode the kernel knows (io_uring_probe.last_op).
	LastOp  uint8    `json:"last_op"`
	Opcodes []string `json:"opcodes"`
}

// Supports reports whether the kernel supports the opcode named op ("RECV").
func (p Probe) Supports(op string) bool { return slices.Contains(p.Opcodes, op) }

// HasFeature reports whether setup reported the feature named f ("NODROP").
func (p Probe) HasFeature(f string) bool { return slices.Contains(p.Features, f) }

// Probe asks the kernel which opcodes it supports (IORING_REGISTER_PROBE, 5.6)
// and returns them with the ring's setup and features.
func (r *Ring) Probe() (Probe, error) {
	// struct io_uring_probe (16 bytes) and its ops[] of struct io_uring_probe_op
	// (8 bytes each: op, resv, flags, resv2); a Go slice is fine here, the
	// kernel holds it only during the call.
	buf := make([]byte, 16+probeOpsCapacity*8)
	if _, errno := sysRegister(r.fd, registerProbe, unsafe.Pointer(&buf[0]), probeOpsCapacity); errno != 0 {
		e := &Error{Op: "io_uring_register", Detail: "IORING_REGISTER_PROBE", Errno: errno}
		if errno == unix.EINVAL {
			e.Hint = "opcode probing needs Linux 5.6"
		}
		return Probe{}, e
	}
	p := Probe{Kernel: kernelRelease(), Setup: r.setup, Features: featureList(r.setup.Features), LastOp: buf[0]}
	opsLen := int(buf[1])
	for i := 0; i < opsLen && i < probeOpsCapacity; i++ {
		op := buf[16+i*8:]
		flags := uint16(op[2]) | uint16(op[3])<<8
		if flags&probeOpSupported != 0 {
			p.Opcodes = append(p.Opcodes, opName(op[0]))
		}
	}
	return p, nil
}

// ProbeKernel creates a small ring on the calling goroutine's locked thread,
// probes it and closes it: the value a run's manifest records.
func ProbeKernel() (Probe, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, err := New(Config{Entries: 4})
	if err != nil {
		return Probe{}, err
	}
	p, err := r.Probe()
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	return p, err
}

func opName(op uint8) string {
	if int(op) < len(opNames) {
		return opNames[op]
	}
	return fmt.Sprintf("op%d", op)
}

func featureList(bits uint32) []string {
	var out []string
	for i := 0; i < 32; i++ {
		if bits&(1<<i) == 0 {
			continue
		}
		if i < len(featureNames) {
			out = append(out, featureNames[i])
		} else {
			out = append(out, fmt.Sprintf("bit%d", i))
		}
	}
	return out
}

func kernelRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "unknown"
	}
	return unix.ByteSliceToString(u.Release[:])
}
