package forge

import (
	"errors"

	"github.com/forge-run/forge/scoring"
)

// validateScoring places the scoring package's problems in the manifest.
func validateScoring(c scoring.Config, v *validator) {
	err := c.Validate()
	if err == nil {
		return
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		var fe *scoring.FieldError
		if errors.As(e, &fe) {
			v.at(fe.Msg, append([]any{"scoring"}, fe.Path...)...)
			continue
		}
		v.at(e.Error(), "scoring")
	}
}
