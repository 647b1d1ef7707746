package janitor

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// WriteTable prints the orphans as a table, one line each, their age as of now.
func WriteTable(w io.Writer, orphans []Orphan, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tPROJECT\tID\tNAME\tOWNER\tAGE\tSTATE")
	for _, o := range orphans {
		state := "orphaned"
		switch {
		case o.Deleted:
			state = "deleted"
		case o.Err != nil:
			state = "delete failed: " + o.Err.Error()
		case o.Waiting != "":
			state = "orphaned, not deleted: " + o.Waiting
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.Kind, o.ProjectID, o.ID, o.Name, o.Owner,
			now.Sub(o.CreatedAt).Round(time.Minute), state)
	}
	return tw.Flush()
}
