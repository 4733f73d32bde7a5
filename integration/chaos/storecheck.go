package chaos

import (
	"fmt"

	"rmqd/store"
)

// checkSummary is a report in one line for the run's table (the chaos runs check stores with store.Inspect, the checker of `rmqd check`): the counts, or the first problems.
func checkSummary(r store.Report) string {
	if len(r.Problems) == 0 {
		return fmt.Sprintf("ok (%d records, %d units)", r.Records, r.Units)
	}
	p, more := r.Problems, ""
	if len(p) > 5 {
		p, more = p[:5], fmt.Sprintf(" (+%d more)", len(p)-5)
	}
	return fmt.Sprintf("%d problems%s: %v", len(r.Problems), more, p)
}
