package matrix

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestReadmeListsEveryField holds README.md's list of spec fields (the
// paragraph starting "A spec names a baseline cell and factors") to
// Fields, the load knobs of loadgen.Knobs among them: each field is
// there in backticks, and the list names no field that is not one.
func TestReadmeListsEveryField(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "A spec names a baseline cell and factors")
	if start < 0 {
		t.Fatal(`README.md has no paragraph starting "A spec names a baseline cell and factors"`)
	}
	// The list is the parenthesis after "has the fields:".
	list, _, ok := strings.Cut(text[start:], ". A `reactor` factor")
	if !ok {
		t.Fatal("README.md's list of spec fields does not end where this test expects it to")
	}
	_, list, _ = strings.Cut(list, "has the fields:")
	var listed []string
	for _, m := range regexp.MustCompile("`([a-z_]+)[`:]").FindAllStringSubmatch(list, -1) {
		listed = append(listed, m[1])
	}
	for _, f := range Fields {
		if !slices.Contains(listed, f) {
			t.Errorf("README.md's list of spec fields lacks `%s`", f)
		}
	}
	for _, f := range listed {
		if !slices.Contains(Fields, f) {
			t.Errorf("README.md's list of spec fields names `%s`, which is not a field (Fields)", f)
		}
	}
}
