package daytona

import (
	"fmt"
	"net"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/forge-run/forge/internal/yamlcheck"
	"github.com/forge-run/forge/runner"
)

// MaxAllowList is how many CIDR ranges Daytona takes in a network allow list.
const MaxAllowList = 5

// Spec is the manifest's daytona: block (docs/manifest.md), used with
// --daytona. forge only hands the block over; the cli maps the Spec and
// the credentials onto Options.
type Spec struct {
	Snapshot         string            `yaml:"snapshot"`
	Image            string            `yaml:"image"`
	Resources        Resources         `yaml:"resources"`
	NetworkBlockAll  bool              `yaml:"network_block_all"`
	NetworkAllowList []string          `yaml:"network_allow_list"` // IPv4 CIDR ranges, e.g. the model gateway's
	CreateRate       float64           `yaml:"create_rate"`
	AutoStop         int               `yaml:"auto_stop"`
	Volume           *Volume           `yaml:"volume"`
	Env              map[string]string `yaml:"env"`
	Labels           map[string]string `yaml:"labels"`
}

// Resources are a sandbox's size; memory and disk in GB.
type Resources struct {
	CPU    int `yaml:"cpu"`
	Memory int `yaml:"memory"`
	Disk   int `yaml:"disk"`
}

// DecodeSpec strictly decodes and checks n, the daytona: block at path
// (null is an empty one), of every manifest. Each problem is a
// *yamlcheck.Error with its position and key path: all unknown keys, else
// a value of the wrong type, else values out of bounds.
func DecodeSpec(n *yaml.Node, path string) (Spec, []error) {
	s, m, errs := yamlcheck.Block[Spec](n, path, "{image: python:3.12, resources: {cpu: 2}}")
	if m == nil || len(errs) > 0 {
		return s, errs
	}
	if errs := s.check(m, path); len(errs) > 0 {
		return Spec{}, errs
	}
	return s, nil
}

// check finds the problems of s, decoded from n, placing each at its key.
func (s Spec) check(n *yaml.Node, path string) []error {
	var errs []error
	at := func(msg string, keys ...any) { errs = append(errs, yamlcheck.Under(n, path, msg, keys...)) }
	if s.Snapshot != "" && s.Image != "" {
		at("give snapshot: or image:, not both", "image")
	}
	for _, r := range []struct {
		n    int
		name string
	}{{s.Resources.CPU, "cpu"}, {s.Resources.Memory, "memory"}, {s.Resources.Disk, "disk"}} {
		if r.n < 0 {
			at("must not be negative", "resources", r.name)
		}
	}
	if s.NetworkBlockAll && len(s.NetworkAllowList) > 0 {
		at("give network_block_all or network_allow_list, not both", "network_allow_list")
	}
	if len(s.NetworkAllowList) > MaxAllowList {
		at(fmt.Sprintf("has %d ranges; Daytona takes at most %d", len(s.NetworkAllowList), MaxAllowList), "network_allow_list")
	}
	for i, c := range s.NetworkAllowList {
		if ip, _, err := net.ParseCIDR(strings.TrimSpace(c)); err != nil || ip.To4() == nil {
			at(fmt.Sprintf("%q is not an IPv4 CIDR range such as 203.0.113.0/24", c), "network_allow_list", i)
		}
	}
	if s.CreateRate < 0 {
		at("must be positive (sandbox creations per second)", "create_rate")
	}
	if s.AutoStop < 0 {
		at("must not be negative (minutes)", "auto_stop")
	}
	if s.Volume != nil && !runner.ValidID(s.Volume.Name) {
		at(fmt.Sprintf("%q is not a valid volume name", s.Volume.Name), "volume", "name")
	}
	for k := range s.Env {
		if err := runner.CheckEnvName(k); err != nil {
			at(err.Error(), "env")
		}
	}
	return errs
}
