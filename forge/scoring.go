package forge

import (
	"errors"
	"fmt"
	"strings"

	"github.com/forge-run/forge/scoring"
)

// validateScoring places the scoring package's problems in the manifest;
// suite says whether the manifest has tasks for task-aware checks.
func validateScoring(c scoring.Config, v *validator, suite bool) {
	if fields := c.TaskFields(); len(fields) > 0 && !suite {
		v.at(fmt.Sprintf("checks compare with task fields (%s) but the manifest has no tasks: or tasks_file:",
			strings.Join(fields, ", ")), "scoring")
	}
	for i, s := range c.Scorers {
		checkNames(v.at, s.Secrets, "scoring", i, "secrets")
	}
	err := c.Validate()
	if err == nil {
		return
	}
	for _, e := range unjoin(err) {
		var fe *scoring.FieldError
		if errors.As(e, &fe) {
			v.at(fe.Msg, append([]any{"scoring"}, fe.Path...)...)
			continue
		}
		v.at(e.Error(), "scoring")
	}
}

// suite is what scoring needs of the plan: its candidates and tasks.
func (p *Plan) suite(passAtK int) scoring.Suite {
	s := scoring.Suite{Candidates: p.Candidates, PassAtK: passAtK}
	for _, t := range p.Tasks {
		s.Tasks = append(s.Tasks, scoring.Task{ID: t.ID, Weight: t.Weight, Fields: t.Fields, PassMark: t.PassMark})
	}
	return s
}
