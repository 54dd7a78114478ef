package yamlcheck

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestEditDistance(t *testing.T) {
	if d := editDistance("timout", "timeout"); d != 1 {
		t.Errorf("= %d", d)
	}
	if d := editDistance("", "abc"); d != 3 {
		t.Errorf("= %d", d)
	}
}

type inner struct {
	Name string `yaml:"name"`
}

type outer struct {
	Timeout string           `yaml:"timeout"`
	Items   []inner          `yaml:"items"`
	ByName  map[string]inner `yaml:"by_name"`
}

func TestUnknownKeysAreFoundEverywhereWithTheirPlace(t *testing.T) {
	src := "timout: 1\nitems:\n  - name: a\n    nmae: b\nby_name:\n  x: {nam: c}\nwhatever: 1\n"
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(src), &root); err != nil {
		t.Fatal(err)
	}
	errs := InFile(errors.Join(UnknownKeys(root.Content[0], reflect.TypeFor[outer](), "")...), "f.yaml", nil)
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	want := []string{
		`f.yaml:1:1: timout: unknown key "timout" (did you mean "timeout"?)`,
		`f.yaml:4:5: items[0].nmae: unknown key "nmae" (did you mean "name"?)`,
		`f.yaml:6:7: by_name.x.nam: unknown key "nam" (did you mean "name"?)`,
		`f.yaml:7:1: whatever: unknown key "whatever" (known: by_name, items, timeout)`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// yaml.v3's own errors come back placed at their line, with the message
// reworded when asked.
func TestInFilePlacesYAMLsOwnErrors(t *testing.T) {
	var v struct {
		N int `yaml:"n"`
	}
	err := yaml.Unmarshal([]byte("\nn: many\n"), &v)
	errs := InFile(err, "f.yaml", func(s string) string { return strings.ReplaceAll(s, "!!str", "text") })
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "f.yaml:2:1: cannot unmarshal text `many`") {
		t.Errorf("got %v", errs)
	}
	at := At(nil, "k", "bad")
	if errs := InFile(errors.Join(at, errors.New("other")), "g.yaml", nil); len(errs) != 2 || errs[0].Error() != "g.yaml: k: bad" || errs[1].Error() != "g.yaml: other" {
		t.Errorf("got %v", errs)
	}
	if errs := InFile(errors.New("yaml: line 3: did not find expected key"), "h.yaml", func(s string) string { return "not valid YAML: " + s }); len(errs) != 1 || errs[0].Error() != "h.yaml:3:1: not valid YAML: did not find expected key" {
		t.Errorf("got %v", errs)
	}
}

func TestFriendly(t *testing.T) {
	for in, want := range map[string]string{
		"cannot unmarshal !!str `two` into int":           "cannot unmarshal text `two` into an integer",
		"cannot unmarshal !!int `3` into forge.Resources": "cannot unmarshal a number `3` into Resources",
		"cannot unmarshal !!seq into map[string]string":   "cannot unmarshal a list into a mapping of strings",
		"cannot unmarshal !!map into []forge.Candidate":   "cannot unmarshal a mapping into []Candidate",
		"cannot unmarshal !!str `maybe` into bool":        "cannot unmarshal text `maybe` into true/false",
		"cannot unmarshal !!str `a.b into c` into string": "cannot unmarshal text `a.b into c` into text",
		`mapping key "a" already defined at line 1`:       `mapping key "a" already defined at line 1`,
	} {
		if got := Friendly(in); got != want {
			t.Errorf("Friendly(%q) = %q, want %q", in, got, want)
		}
	}
}

// Keys named by also are known at the top (and suggested), not walked.
func TestUnknownKeysAlso(t *testing.T) {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte("timeout: 1\nblock: {anything: 1}\nblok: 2\n"), &root); err != nil {
		t.Fatal(err)
	}
	errs := UnknownKeys(root.Content[0], reflect.TypeFor[outer](), "", "block")
	if len(errs) != 1 || errs[0].Error() != `:3:1: blok: unknown key "blok" (did you mean "block"?)` {
		t.Errorf("got %v", errs)
	}
}

func TestUnder(t *testing.T) {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte("a:\n  b: [x, {c: 1}]\n"), &root); err != nil {
		t.Fatal(err)
	}
	doc := root.Content[0]
	for _, tc := range []struct {
		path string
		keys []any
		want string
	}{
		{"", []any{"a", "b", 1, "c"}, ":2:14: a.b[1].c: m"},
		{"top", []any{"a", "b", 0}, ":2:7: top.a.b[0]: m"},
		{"", []any{"a", "missing"}, ":2:3: a.missing: m"}, // a's value
		{"", []any{"a", "b", 5}, ":2:6: a.b[5]: m"},       // the list
		{"", nil, ":1:1: m"},
	} {
		if got := Under(doc, tc.path, "m", tc.keys...).Error(); got != tc.want {
			t.Errorf("Under(%q, %v) = %q, want %q", tc.path, tc.keys, got, tc.want)
		}
	}
	if got := KindName(doc.Content[1].Content[1]); got != "list" {
		t.Errorf("KindName = %q", got)
	}
}
