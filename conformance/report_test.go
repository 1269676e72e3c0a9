package conformance_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/conformance"
)

// An interrupted run says so in every report: the JSON's "interrupted"
// and verdicts, the JUnit suite's property and counts (the cases skipped,
// not failed), the table's last line.
func TestReportsOfAnInterruptedRun(t *testing.T) {
	results := []conformance.Result{
		{ID: "F1", Title: "one", Verdict: conformance.Pass},
		{ID: "F2", Title: "two", Verdict: conformance.Interrupted, Reason: "the run was interrupted 1s into the case: no verdict"},
		{ID: "F3", Title: "three", Verdict: conformance.NotRun, Reason: "not run: the run was interrupted before it"},
	}
	var js bytes.Buffer
	if err := conformance.WriteJSON(&js, "t", results); err != nil {
		t.Fatal(err)
	}
	var rep conformance.Report
	if err := json.Unmarshal(js.Bytes(), &rep); err != nil || !rep.Interrupted || rep.Summary.Interrupted != 1 || rep.Summary.NotRun != 1 || rep.Summary.Fail != 0 {
		t.Errorf("JSON (%v):\n%s", err, js.String())
	}
	var x bytes.Buffer
	if err := conformance.WriteJUnit(&x, "t", results); err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Failures    int `xml:"failures,attr"`
		Skipped     int `xml:"skipped,attr"`
		Interrupted int `xml:"interrupted,attr"`
		NotRun      int `xml:"notrun,attr"`
		Properties  []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Cases []struct {
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
		} `xml:"testcase"`
	}
	if err := xml.Unmarshal(x.Bytes(), &suite); err != nil || suite.Failures != 0 || suite.Skipped != 2 || suite.Interrupted != 1 || suite.NotRun != 1 ||
		len(suite.Properties) != 1 || suite.Properties[0] != struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}{"interrupted", "true"} || len(suite.Cases) != 3 || suite.Cases[1].Skipped == nil || !strings.HasPrefix(suite.Cases[1].Skipped.Message, "interrupted: ") ||
		suite.Cases[2].Skipped == nil || !strings.HasPrefix(suite.Cases[2].Skipped.Message, "not run: ") {
		t.Errorf("JUnit (%v) %+v:\n%s", err, suite, x.String())
	}
	var tab bytes.Buffer
	if err := conformance.WriteTable(&tab, "t", results, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tab.String(), "t: 1 passed, 0 failed, 0 skipped, 1 interrupted, 1 not run: the run was interrupted") {
		t.Errorf("table:\n%s", tab.String())
	}

	// A run that finished says it was not interrupted.
	js.Reset()
	if err := conformance.WriteJSON(&js, "t", results[:1]); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js.Bytes(), &rep); err != nil || rep.Interrupted || !strings.Contains(js.String(), `"interrupted": false`) {
		t.Errorf("JSON of a whole run (%v):\n%s", err, js.String())
	}
}
