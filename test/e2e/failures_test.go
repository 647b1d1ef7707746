package e2e

import (
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// TestFailureLinesSayWhatFailedInOneLineEach: only failed specs are listed, each on one line
// with its text, the failing line and Gomega's whole message, cut short only past the bound.
func TestFailureLinesSayWhatFailedInOneLineEach(t *testing.T) {
	failed := func(text, message string, state types.SpecState) types.SpecReport {
		return types.SpecReport{
			ContainerHierarchyTexts: []string{"Faults"}, LeafNodeText: text, State: state,
			Failure: types.Failure{Message: message, Location: types.CodeLocation{FileName: "/src/test/e2e/machines_test.go", LineNumber: 27}},
		}
	}
	report := ginkgo.Report{SpecReports: types.SpecReports{
		{LeafNodeText: "passes", State: types.SpecStatePassed},
		failed("ends with 10 devices", "Timed out after 300.001s.\nThe function passed to Eventually failed at machines_test.go:25 with:\n"+
			"devices in the simulator\nExpected\n    <[]e2e.Device | len:11>\nto have length 10", types.SpecStateFailed),
		failed("times out", strings.Repeat("word ", 500), types.SpecStateTimedout),
	}}

	lines := FailureLines(report)
	if len(lines) != 2 {
		t.Fatalf("got %d lines for two failed specs: %q", len(lines), lines)
	}
	want := "Faults ends with 10 devices [failed] at machines_test.go:27: Timed out after 300.001s. The function passed to Eventually " +
		"failed at machines_test.go:25 with: devices in the simulator Expected <[]e2e.Device | len:11> to have length 10"
	if lines[0] != want {
		t.Errorf("line = %q\nwant   %q", lines[0], want)
	}
	if !strings.HasPrefix(lines[1], "Faults times out [timedout] at machines_test.go:27: word word") ||
		!strings.HasSuffix(lines[1], " …") || len(lines[1]) > maxFailureLine+len(" …") {
		t.Errorf("a long message is not cut at %d bytes: %d bytes, %q…", maxFailureLine, len(lines[1]), lines[1][:80])
	}
}
