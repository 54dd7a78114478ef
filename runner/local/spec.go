package local

import (
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/forge-run/forge/internal/yamlcheck"
)

// Spec is the manifest's local: block (docs/manifest.md): how the local
// backend runs jobs. forge only hands the block over; the cli maps it onto
// Options.
type Spec struct {
	// User is who jobs run as: "root" opts out of a user of their own per
	// job; "unprivileged" (or nothing) is the default.
	User string `yaml:"user"`
}

// DecodeSpec strictly decodes and checks n, the local: block at path (null
// is an empty one). Each problem is a *yamlcheck.Error with its position
// and key path.
func DecodeSpec(n *yaml.Node, path string) (Spec, []error) {
	s, m, errs := yamlcheck.Block[Spec](n, path, "{user: root}")
	if m == nil || len(errs) > 0 {
		return s, errs
	}
	switch s.User {
	case "unprivileged":
		s.User = UserUnprivileged
	case UserRoot, UserUnprivileged:
	default:
		return Spec{}, []error{yamlcheck.Under(m, path, fmt.Sprintf("%q: want unprivileged (a user of its own per job, the default when forge is root) or root", s.User), "user")}
	}
	return s, nil
}
