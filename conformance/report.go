package conformance

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/reactorlab/reactorlab/reactors"
)

// CounterLine is how a result's evidence writes a reference reactor's
// counters: the non-zero ones as name=value, sorted by name. A failed
// case's result ends with its final counters so written; a case that
// quotes counters in its own evidence writes them the same way.
func CounterLine(c reactors.Counters) string {
	b, err := json.Marshal(c)
	if err != nil {
		return err.Error()
	}
	var m map[string]uint64
	if err := json.Unmarshal(b, &m); err != nil {
		return err.Error()
	}
	var parts []string
	for k, v := range m {
		if v != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, v))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// Summary counts verdicts, each apart from the others; Interrupted and
// NotRun are non-zero only for a run that was interrupted.
type Summary struct {
	Pass         int `json:"pass"`
	Fail         int `json:"fail"`
	Skip         int `json:"skip"`
	Inconclusive int `json:"inconclusive"`
	// ByDesign counts the inconclusive results whose precondition the
	// server's design never offers (Result.ByDesign): part of
	// Inconclusive, never more than it.
	ByDesign    int `json:"inconclusive_by_design"`
	Interrupted int `json:"interrupted"`
	NotRun      int `json:"not_run"`
	// StopFindings counts the results whose instance ended badly once it
	// was signalled to stop (Result.AtStop), whatever their verdicts.
	StopFindings int `json:"stop_findings"`
}

// WasInterrupted reports whether the run these counts describe was
// interrupted before every case had its verdict.
func (s Summary) WasInterrupted() bool { return s.Interrupted+s.NotRun > 0 }

// Summarize counts the verdicts of results.
func Summarize(results []Result) Summary {
	var s Summary
	for _, r := range results {
		switch r.Verdict {
		case Pass:
			s.Pass++
		case Fail:
			s.Fail++
		case Skip:
			s.Skip++
		case Inconclusive:
			s.Inconclusive++
			if r.ByDesign {
				s.ByDesign++
			}
		case Interrupted:
			s.Interrupted++
		case NotRun:
			s.NotRun++
		}
		if r.AtStop != "" {
			s.StopFindings++
		}
	}
	return s
}

// WriteTable writes the results as a table a person reads: id, title,
// verdict, duration, and under each case that did not pass its reason and
// evidence, indented (a case not run is in the table only); verbose adds
// every case's log and evidence. The last line counts the verdicts and,
// for an interrupted run, says so.
func WriteTable(w io.Writer, target string, results []Result, verbose bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "ID\tTITLE\tVERDICT\tDURATION\n")
	for _, r := range results {
		verdict := string(r.Verdict)
		if r.Attempts > 1 {
			verdict += fmt.Sprintf(" (attempt %d)", r.Attempts)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\n", r.ID, r.Title, verdict, r.Duration.Round(time.Millisecond))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range results {
		if (r.Verdict == Pass || r.Verdict == NotRun) && r.AtStop == "" && !verbose {
			continue
		}
		verdict := string(r.Verdict)
		if r.Cause != "" {
			verdict += " (" + string(r.Cause) + ")"
		}
		if r.ByDesign {
			verdict += " (the server's design)"
		}
		fmt.Fprintf(w, "\n%s %s: %s", r.ID, verdict, r.Title)
		if r.Reason != "" {
			fmt.Fprintf(w, ": %s", r.Reason)
		}
		fmt.Fprintln(w)
		if r.Verdict == Fail || r.Verdict == Inconclusive || verbose {
			for _, e := range r.Evidence {
				fmt.Fprintf(w, "    %s\n", e)
			}
		}
		if verbose {
			for _, l := range r.Log {
				fmt.Fprintf(w, "    log: %s\n", l)
			}
		}
		if r.AtStop != "" {
			fmt.Fprintf(w, "    at the stop after the case (not this case's verdict): the target ended badly: %s\n", r.AtStop)
		}
	}
	s := Summarize(results)
	line := fmt.Sprintf("%d passed, %d failed, %d skipped", s.Pass, s.Fail, s.Skip)
	switch {
	case s.ByDesign == s.Inconclusive && s.Inconclusive > 0:
		line += fmt.Sprintf(", %d inconclusive (a precondition the server's design never offers: see above)", s.Inconclusive)
	case s.ByDesign > 0:
		line += fmt.Sprintf(", %d inconclusive (a precondition could not be established; in %d of them the server's design never offers it: see above)", s.Inconclusive, s.ByDesign)
	case s.Inconclusive > 0:
		line += fmt.Sprintf(", %d inconclusive (a precondition could not be established: see above)", s.Inconclusive)
	}
	if s.StopFindings > 0 {
		line += fmt.Sprintf("; the target ended badly when stopped after %d of the cases (a finding of its own: see above)", s.StopFindings)
	}
	if s.WasInterrupted() {
		line += fmt.Sprintf(", %d interrupted, %d not run: the run was interrupted, and judges nothing it did not finish", s.Interrupted, s.NotRun)
	}
	_, err := fmt.Fprintf(w, "\n%s: %s\n", target, line)
	return err
}

// Report is the machine-readable form of a run.
type Report struct {
	Target string `json:"target"`
	// Interrupted is true when the run was interrupted (its context
	// cancelled: SIGINT or SIGTERM for the command) before every case had
	// its verdict; the case then running has verdict "interrupted", the
	// cases after it "not-run", and Summary counts both.
	Interrupted bool     `json:"interrupted"`
	Results     []Result `json:"results"`
	Summary     Summary  `json:"summary"`
}

// WriteJSON writes the run as one JSON object, a Report: {"target",
// "interrupted", "results", "summary"}. An interrupted run has
// "interrupted": true, the case that was running has "verdict":
// "interrupted" and those not reached "verdict": "not-run"; the summary
// counts them as "interrupted" and "not_run".
func WriteJSON(w io.Writer, target string, results []Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	sum := Summarize(results)
	return enc.Encode(Report{Target: target, Interrupted: sum.WasInterrupted(), Results: results, Summary: sum})
}

type junitSuite struct {
	XMLName     xml.Name         `xml:"testsuite"`
	Name        string           `xml:"name,attr"`
	Tests       int              `xml:"tests,attr"`
	Failures    int              `xml:"failures,attr"`
	Skipped     int              `xml:"skipped,attr"`
	Inconcl     int              `xml:"inconclusive,attr"`
	Interrupted int              `xml:"interrupted,attr,omitempty"`
	NotRun      int              `xml:"notrun,attr,omitempty"`
	Time        float64          `xml:"time,attr"`
	Properties  *junitProperties `xml:"properties,omitempty"`
	Cases       []junitCase      `xml:"testcase"`
}

type junitCase struct {
	Name       string           `xml:"name,attr"`
	Classname  string           `xml:"classname,attr"`
	Time       float64          `xml:"time,attr"`
	Properties *junitProperties `xml:"properties,omitempty"`
	Failure    *junitMessage    `xml:"failure,omitempty"`
	Skipped    *junitMessage    `xml:"skipped,omitempty"`
	SystemOut  string           `xml:"system-out,omitempty"`
}

type junitProperties struct {
	Property []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

// WriteJUnit writes the run as a JUnit XML test suite (one testcase per
// case, classname "conformance.<target>"), for CI systems. JUnit has no
// verdict between pass and fail: an inconclusive case is written as
// skipped, its message beginning "inconclusive: ", with a property
// verdict=inconclusive (and by_design=true, its message beginning
// "inconclusive (the server's design): ", when Result.ByDesign), and the
// suite's inconclusive attribute counts them (they are also in its skipped
// count, as JUnit readers expect).
//
// An interrupted run is neither: the suite has a property interrupted=true
// and the attributes interrupted (the case that was running: 0 or 1) and
// notrun (the cases not reached); each of those cases is skipped, its
// message beginning "interrupted: " or "not run: ", with a property
// verdict=interrupted or verdict=not-run, and counted in skipped.
func WriteJUnit(w io.Writer, target string, results []Result) error {
	s := Summarize(results)
	suite := junitSuite{Name: "reactorlab conformance: " + target, Tests: len(results), Failures: s.Fail,
		Skipped: s.Skip + s.Inconclusive + s.Interrupted + s.NotRun, Inconcl: s.Inconclusive, Interrupted: s.Interrupted, NotRun: s.NotRun}
	if s.WasInterrupted() {
		suite.Properties = &junitProperties{Property: []junitProperty{{Name: "interrupted", Value: "true"}}}
	}
	for _, r := range results {
		jc := junitCase{Name: r.ID + " " + r.Title, Classname: "conformance." + target, Time: r.Duration.Seconds(), SystemOut: strings.Join(r.Log, "\n")}
		switch r.Verdict {
		case Fail:
			jc.Failure = &junitMessage{Message: string(r.Cause) + ": " + r.Reason, Body: strings.Join(r.Evidence, "\n")}
		case Skip:
			jc.Skipped = &junitMessage{Message: r.Reason}
		case Inconclusive:
			jc.Skipped = &junitMessage{Message: "inconclusive: " + r.Reason, Body: strings.Join(r.Evidence, "\n")}
			jc.Properties = &junitProperties{Property: []junitProperty{{Name: "verdict", Value: string(Inconclusive)}}}
			if r.ByDesign {
				jc.Skipped.Message = "inconclusive (the server's design): " + r.Reason
				jc.Properties.Property = append(jc.Properties.Property, junitProperty{Name: "by_design", Value: "true"})
			}
		case Interrupted:
			jc.Skipped = &junitMessage{Message: "interrupted: " + r.Reason, Body: strings.Join(r.Evidence, "\n")}
			jc.Properties = &junitProperties{Property: []junitProperty{{Name: "verdict", Value: string(Interrupted)}}}
		case NotRun:
			jc.Skipped = &junitMessage{Message: "not run: " + strings.TrimPrefix(r.Reason, "not run: ")}
			jc.Properties = &junitProperties{Property: []junitProperty{{Name: "verdict", Value: string(NotRun)}}}
		}
		if r.AtStop != "" {
			if jc.Properties == nil {
				jc.Properties = &junitProperties{}
			}
			jc.Properties.Property = append(jc.Properties.Property, junitProperty{Name: "at_stop", Value: r.AtStop})
		}
		suite.Time += jc.Time
		suite.Cases = append(suite.Cases, jc)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(suite); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
