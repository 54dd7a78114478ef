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

// An open mapping's own keys may be any; below its known keys, unknown
// ones are found as UnknownKeys finds them.
func TestUnknownKeysBelowLeaveTheOpenMappingsOwn(t *testing.T) {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte("whatever: 1\nitems:\n  - nmae: b\ntimeout: 2\n"), &root); err != nil {
		t.Fatal(err)
	}
	errs := InFile(errors.Join(UnknownKeysBelow(root.Content[0], reflect.TypeFor[outer](), "[3]")...), "f.yaml", nil)
	if len(errs) != 1 || errs[0].Error() != `f.yaml:3:5: [3].items[0].nmae: unknown key "nmae" (did you mean "name"?)` {
		t.Errorf("got %v", errs)
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

// Plain says yaml.v3's type errors, as they come or as Friendly says them,
// in the words of one who writes YAML: what is wanted, and what was given.
func TestPlain(t *testing.T) {
	for in, want := range map[string]string{
		"cannot unmarshal !!str `two` into int":           `want a whole number (e.g. 4), not the text "two"`,
		"cannot unmarshal text `two` into an integer":     `want a whole number (e.g. 4), not the text "two"`,
		"cannot unmarshal !!int `3` into forge.Resources": "the number 3 is the wrong kind of value here",
		"cannot unmarshal a list into Volume":             "a list is the wrong kind of value here",
		"cannot unmarshal !!seq into map[string]string":   "want a mapping of names to text (e.g. {NAME: value}), not a list",
		"cannot unmarshal !!map into []forge.Candidate":   "want a list, not a mapping",
		"cannot unmarshal !!str `maybe` into bool":        `want true or false, not the text "maybe"`,
		"cannot unmarshal !!str `a.b into c` into string": `want text, not the text "a.b into c"`,
		`mapping key "a" already defined at line 1`:       `"a" is given twice (also at line 1): keep one`,
		"found unexpected end of stream":                  "found unexpected end of stream",
	} {
		if got := Plain(in); got != want {
			t.Errorf("Plain(%q) = %q, want %q", in, got, want)
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

// A syntax error is placed at the line where the text stops being YAML,
// not where yaml.v3 says, and a tab says so.
func TestSyntax(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"objective: x\ncandidates:\n  - id: a\n    script: a.py\n\ttimeout: 5s\n",
			"f.yaml:5:1: " + TabMsg},
		{"objective: x\ndefaults:\n\ttimeout: 5s\n",
			"f.yaml:3:1: " + TabMsg},
		{"a:\n  b: 1\n  \tc: 2\n  d: 3\n\te: 4\n",
			"f.yaml:3:3: " + TabMsg + "\nf.yaml:5:1: " + TabMsg},
		{"objective: \"unterminated\ncandidates: [\n",
			"f.yaml:1:12: not valid YAML: this quote opens a value that is never closed: end it with \""},
		{"a: 1\nb: 'it''s\nc: 3\n",
			"f.yaml:2:4: not valid YAML: this quote opens a value that is never closed: end it with '"},
		{"a: 1\nb: [x, y\nc: 3\n",
			"f.yaml:2:4: not valid YAML: this [ opens a list that is never closed: end it with ]"},
		{"a: \"two\n  lines\"\nb: {c: 1}\n d: 2\n",
			"f.yaml:4:2: not valid YAML: this line is not indented like the keys around it"},
		{"objective: x\n  bad: 1\n",
			`f.yaml:2:3: not valid YAML: a "key: value" where it cannot start: check the indentation, or quote a value that holds ": "`},
		{"a: @x\n", "f.yaml:1:1: not valid YAML: this character cannot start a value (@ and ` are reserved): quote the value"},
	} {
		var n yaml.Node
		err := yaml.Unmarshal([]byte(tc.src), &n)
		if err == nil {
			t.Fatalf("%q parses", tc.src)
		}
		var got []string
		for _, e := range Syntax("f.yaml", []byte(tc.src), err) {
			got = append(got, e.Error())
		}
		if strings.Join(got, "\n") != tc.want {
			t.Errorf("%q (yaml.v3: %v):\n got %s\nwant %s", tc.src, err, strings.Join(got, "\n"), tc.want)
		}
	}
}

// span is a type with its own UnmarshalYAML, as forge's durations are.
type span int

func (s *span) UnmarshalYAML(n *yaml.Node) error {
	if n.Value == "never" {
		return At(n, "", `"never" is not a span`)
	}
	return n.Decode((*int)(s))
}

type spec struct {
	Count int               `yaml:"count"`
	Rate  float64           `yaml:"rate"`
	Span  span              `yaml:"span"`
	Tags  []string          `yaml:"tags"`
	Env   map[string]string `yaml:"env"`
	Items []inner           `yaml:"items"`
	On    *bool             `yaml:"on"`
}

// Decode reports every value that does not decode, each at its place with
// its key path and what is wanted, and decodes the rest.
func TestDecode(t *testing.T) {
	src := `count: many
rate: 0.5
span: never
tags: just one
env: {A: [1]}
items:
  - name: a
  - [b]
  - name: c
on: maybe
rate: 0.25
`
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(src), &root); err != nil {
		t.Fatal(err)
	}
	var s spec
	var got []string
	for _, e := range Decode(root.Content[0], &s, "top") {
		got = append(got, e.Error())
	}
	want := []string{
		// The repeated key is told at its second place.
		`:11:1: top.rate: is given twice (also at line 2): keep one`,
		`:1:8: top.count: want a whole number (e.g. 4), not the text "many"`,
		`:3:7: top.span: "never" is not a span`,
		`:4:7: top.tags: want a list of text (e.g. [a, b], or one "- item" a line), not the text "just one"`,
		`:5:10: top.env.A: want text, not a list`,
		`:8:5: top.items[1]: want a mapping (keys such as name:), not a list`,
		`:10:5: top.on: want true or false, not the text "maybe"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s.Rate != 0.25 || len(s.Items) != 3 || s.Items[0].Name != "a" || s.Items[2].Name != "c" || s.Items[1].Name != "" {
		t.Errorf("the rest did not decode, or lost its place: %+v", s)
	}
}

// Place puts yaml.v3's type errors, which name a line only, at their node
// and key path, in plain words, whether they come raw or as InFile and
// Friendly made them.
func TestPlace(t *testing.T) {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte("box:\n  size: big\n  items: {a: 1}\n"), &root); err != nil {
		t.Fatal(err)
	}
	n := root.Content[0].Content[1]
	var v struct {
		Size  int      `yaml:"size"`
		Items []string `yaml:"items"`
	}
	err := n.Decode(&v)
	want := "f.yaml:2:9: box.size: want a whole number (e.g. 4), not the text \"big\"\n" +
		"f.yaml:3:10: box.items: want a list of text (e.g. [a, b]), not a mapping"
	for _, e := range []error{err, errors.Join(InFile(err, "", Friendly)...)} {
		var got []string
		for _, p := range InFile(errors.Join(Place(e, n, "box")...), "f.yaml", nil) {
			got = append(got, p.Error())
		}
		if strings.Join(got, "\n") != want {
			t.Errorf("from %v:\n%s\nwant\n%s", e, strings.Join(got, "\n"), want)
		}
	}
}
