package forge

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/forge-run/forge/internal/yamlcheck"
	"gopkg.in/yaml.v3"
)

// Duration is a Go duration string in the manifest ("90s", "2m").
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return yamlcheck.At(n, "", "want a duration (e.g. 90s, 2m, 1h30m), not "+yamlcheck.Got(n))
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return yamlcheck.At(n, "", fmt.Sprintf("%q is not a duration (want e.g. 90s, 2m, 1h30m)", n.Value))
	}
	if v <= 0 {
		return yamlcheck.At(n, "", fmt.Sprintf("must be positive, not %q (want e.g. 90s, 2m, 1h30m)", n.Value))
	}
	*d = Duration(v)
	return nil
}

// Size is a byte count in the manifest: 1048576, "512KiB", "1MiB", "2GB".
type Size int64

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
	{"B", 1},
}

// ParseSize parses a byte count with an optional unit.
func ParseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || n <= 0 || n*float64(mult) > 1<<50 {
		return 0, fmt.Errorf("%q is not a positive size (want e.g. 1048576, 512KiB, 1MiB)", s)
	}
	return Size(n * float64(mult)), nil
}

// UnmarshalYAML parses a size.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return yamlcheck.At(n, "", "want a size (e.g. 1048576, 512KiB, 1MiB), not "+yamlcheck.Got(n))
	}
	v, err := ParseSize(n.Value)
	if err != nil {
		return yamlcheck.At(n, "", err.Error())
	}
	*s = v
	return nil
}
