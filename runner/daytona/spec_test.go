package daytona

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/forge-run/forge/internal/yamlcheck"
)

// block parses a manifest and returns its daytona: value.
func block(t *testing.T, manifest string) *yaml.Node {
	t.Helper()
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(manifest), &root); err != nil {
		t.Fatal(err)
	}
	doc := root.Content[0]
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value == "daytona" {
			return doc.Content[i+1]
		}
	}
	t.Fatalf("no daytona: in %q", manifest)
	return nil
}

func TestDecodeSpec(t *testing.T) {
	n := block(t, `objective: x
daytona:
  image: python:3.12
  resources: {cpu: 2, memory: 4, disk: 8}
  network_block_all: true
  create_rate: 2.5
  auto_stop: 30
  volume: {name: cache, mount: data}
  env: {MODE: fast}
  labels: {team: search}
`)
	s, errs := DecodeSpec(n, "daytona")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := Spec{Image: "python:3.12", Resources: Resources{CPU: 2, Memory: 4, Disk: 8}, NetworkBlockAll: true,
		CreateRate: 2.5, AutoStop: 30, Volume: &Volume{Name: "cache", Mount: "data"},
		Env: map[string]string{"MODE": "fast"}, Labels: map[string]string{"team": "search"}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("spec = %+v\nwant %+v", s, want)
	}

	for _, m := range []string{"daytona:\n", "daytona: null\n", "daytona: {}\n"} {
		if s, errs := DecodeSpec(block(t, m), "daytona"); len(errs) > 0 || !reflect.DeepEqual(s, Spec{}) {
			t.Errorf("%q: %+v, %v", m, s, errs)
		}
	}
	s, errs = DecodeSpec(block(t, "base: &b {snapshot: snap}\ndaytona: *b\n"), "daytona")
	if len(errs) > 0 || s.Snapshot != "snap" {
		t.Errorf("alias: %+v, %v", s, errs)
	}
}

// TestDecodeSpecErrors: every problem is a *yamlcheck.Error placed at its
// node with its key path (the manifest's file is forge's to fill in).
func TestDecodeSpecErrors(t *testing.T) {
	cases := []struct {
		name, block string
		want        []string
	}{
		{"negative resources", "daytona:\n  resources:\n    cpu: -1\n    memory: -2\n",
			[]string{"3:10: daytona.resources.cpu: must not be negative", "4:13: daytona.resources.memory: must not be negative"}},
		{"snapshot and image", "daytona:\n  snapshot: s\n  image: python:3.12\n",
			[]string{"3:10: daytona.image: give snapshot: or image:, not both"}},
		{"unknown keys", "daytona:\n  imgae: x\n  resources: {cpuu: 1}\n",
			[]string{`2:3: daytona.imgae: unknown key "imgae" (did you mean "image"?)`,
				`3:15: daytona.resources.cpuu: unknown key "cpuu" (did you mean "cpu"?)`}},
		{"wrong types", "daytona:\n  resources:\n    cpu: two\n  volume: [x]\n",
			[]string{"3:1: cannot unmarshal text `two` into an integer", "4:1: cannot unmarshal a list into Volume"}},
		{"not a mapping", "daytona: 5\n",
			[]string{"1:10: daytona: must be a mapping such as {image: python:3.12, resources: {cpu: 2}}, not a plain value"}},
		{"bounds", "daytona:\n  volume: {name: ../x}\n  create_rate: -1\n  auto_stop: -3\n  env: {FORGE_X: 1}\n",
			[]string{"3:16: daytona.create_rate: must be positive (sandbox creations per second)",
				"4:14: daytona.auto_stop: must not be negative (minutes)",
				`2:18: daytona.volume.name: "../x" is not a valid volume name`,
				`5:8: daytona.env: "FORGE_X": FORGE_* variables are set by forge itself`}},
		{"bad variable name", "daytona:\n  env: {1BAD: 2}\n",
			[]string{`2:8: daytona.env: "1BAD" is not a valid variable name`}},
		{"volume without a name", "daytona:\n  volume: {mount: data}\n",
			[]string{`2:11: daytona.volume.name: "" is not a valid volume name`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, errs := DecodeSpec(block(t, tc.block), "daytona")
			if !reflect.DeepEqual(s, Spec{}) {
				t.Errorf("a spec came with the errors: %+v", s)
			}
			var got []string
			for _, err := range errs {
				var e *yamlcheck.Error
				if !errors.As(err, &e) || e.File != "" {
					t.Errorf("%#v is not a *yamlcheck.Error without a file", err)
				}
				got = append(got, strings.TrimPrefix(err.Error(), ":"))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// FuzzDecodeSpec: any YAML as a daytona: block is decoded without a panic,
// every problem is a *yamlcheck.Error, and what is accepted obeys the rules.
func FuzzDecodeSpec(f *testing.F) {
	for _, s := range []string{
		"image: python:3.12\nresources: {cpu: 2}\n",
		"snapshot: s\nvolume: {name: v, mount: /data}\nenv: {A: b}\n",
		"resources: {cpu: -1}\n",
		"&a [*a]\n",
		"5\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var root yaml.Node
		if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
			return
		}
		s, errs := DecodeSpec(root.Content[0], "daytona")
		for _, err := range errs {
			var e *yamlcheck.Error
			if !errors.As(err, &e) {
				t.Fatalf("%T %v is not a *yamlcheck.Error", err, err)
			}
		}
		if len(errs) > 0 {
			return
		}
		r := s.Resources
		if r.CPU < 0 || r.Memory < 0 || r.Disk < 0 || s.CreateRate < 0 || s.AutoStop < 0 || (s.Snapshot != "" && s.Image != "") {
			t.Fatalf("accepted %+v", s)
		}
	})
}
