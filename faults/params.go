package faults

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// param is one named parameter of a fault, bound to its field: get prints the
// value for a spec ("" for the zero value, which specs leave out) and set parses
// one.
type param struct {
	name string
	get  func() string
	set  func(v string) error
}

var errNegative = errors.New("must not be negative")

func parseCount(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err == nil && n < 0 {
		err = errNegative
	}
	return n, err
}

func intParam(name string, p *int) param {
	return param{name,
		func() string { return nonZero(*p != 0, strconv.Itoa(*p)) },
		func(v string) (err error) { *p, err = parseCount(v); return err }}
}

func uint32Param(name string, p *uint32) param {
	return param{name,
		func() string { return nonZero(*p != 0, strconv.FormatUint(uint64(*p), 10)) },
		func(v string) error {
			n, err := strconv.ParseUint(v, 10, 32)
			*p = uint32(n)
			return err
		}}
}

func boolParam(name string, p *bool) param {
	return param{name,
		func() string { return nonZero(*p, "true") },
		func(v string) (err error) { *p, err = strconv.ParseBool(v); return err }}
}

func durationParam(name string, p *time.Duration) param {
	return param{name,
		func() string { return nonZero(*p != 0, p.String()) },
		func(v string) (err error) {
			*p, err = time.ParseDuration(v)
			if err == nil && *p < 0 {
				err = errNegative
			}
			return err
		}}
}

// intsParam is a list of counts separated by "/", e.g. "1/7/31".
func intsParam(name string, p *[]int) param {
	return param{name,
		func() string {
			s := make([]string, len(*p))
			for i, n := range *p {
				s[i] = strconv.Itoa(n)
			}
			return strings.Join(s, "/")
		},
		func(v string) error {
			var ns []int
			for _, f := range strings.Split(v, "/") {
				n, err := parseCount(strings.TrimSpace(f))
				if err != nil {
					return err
				}
				ns = append(ns, n)
			}
			*p = ns
			return nil
		}}
}

func nonZero(ok bool, s string) string {
	if ok {
		return s
	}
	return ""
}
