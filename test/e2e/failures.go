package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// maxFailureLine bounds one failure's line: enough for an Eventually's timeout and the
// assertion that failed last, short enough that a log excerpt shows it whole.
const maxFailureLine = 600

// FailureLines says in one line per failed spec what failed: its text, where, and Gomega's
// message. Ginkgo's closing summary gives only the location, and the message it printed with
// the spec may be thousands of lines before the end of a long suite's output, where a CI log's
// excerpt does not reach.
func FailureLines(r ginkgo.Report) []string {
	var lines []string
	for _, s := range r.SpecReports {
		if !s.State.Is(types.SpecStateFailureStates) {
			continue
		}
		loc := s.Failure.Location
		line := fmt.Sprintf("%s [%s] at %s:%d: %s", s.FullText(), s.State, filepath.Base(loc.FileName), loc.LineNumber,
			strings.Join(strings.Fields(s.Failure.Message), " "))
		if len(line) > maxFailureLine {
			line = line[:maxFailureLine] + " …"
		}
		lines = append(lines, line)
	}
	return lines
}

// ReportFailuresLast has t report the suite's failures (FailureLines) once RunSpecs returns, so
// that they are the last lines of the output but for go test's own. Call it before RunSpecs.
func ReportFailuresLast(t *testing.T) {
	var lines []string
	ginkgo.ReportAfterSuite("failures, for the end of the output", func(r ginkgo.Report) { lines = FailureLines(r) })
	t.Cleanup(func() {
		for _, l := range lines {
			t.Error(l)
		}
	})
}
