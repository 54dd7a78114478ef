package local

import (
	"fmt"
	"reflect"

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
	var s Spec
	v := n
	if v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	switch {
	case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null":
		return s, nil
	case v.Kind != yaml.MappingNode:
		return s, []error{yamlcheck.At(n, path, "must be a mapping such as {user: root}, not a "+yamlcheck.KindName(v))}
	}
	if errs := yamlcheck.UnknownKeys(n, reflect.TypeFor[Spec](), path); len(errs) > 0 {
		return Spec{}, errs
	}
	if err := n.Decode(&s); err != nil {
		return Spec{}, yamlcheck.InFile(err, "", yamlcheck.Friendly)
	}
	switch s.User {
	case "unprivileged":
		s.User = UserUnprivileged
	case UserRoot, UserUnprivileged:
	default:
		return Spec{}, []error{yamlcheck.Under(v, path, fmt.Sprintf("%q: want unprivileged (a user of its own per job, the default when forge is root) or root", s.User), "user")}
	}
	return s, nil
}
