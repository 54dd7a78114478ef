package yamlcheck

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Decode decodes n into out (a pointer) and returns every problem, not the
// first: yaml.v3 stops at the first value an UnmarshalYAML refuses, and
// names the others by line only, in Go's words. Each value of the wrong
// kind, or refused by its type's UnmarshalYAML, is an *Error at its node,
// with its key path below path and what is wanted; it is left out, so its
// field keeps its zero value and the rest decodes. Keys out has no field
// for are left out too: UnknownKeys reports them.
func Decode(n *yaml.Node, out any, path string) []error {
	var errs []error
	clean := prune(n, reflect.TypeOf(out).Elem(), path, &errs)
	if clean == nil {
		return errs
	}
	if err := clean.Decode(out); err != nil {
		errs = append(errs, Place(err, n, path)...)
	}
	return errs
}

var (
	typeOfDuration = reflect.TypeFor[time.Duration]()
	typeOfString   = reflect.TypeFor[string]()
)

// prune returns a copy of n without the values that would not decode into
// t, reporting each, or nil when n itself would not.
func prune(n *yaml.Node, t reflect.Type, path string, errs *[]error) *yaml.Node {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == typeOfNode || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return n // null is every type's zero value
	}
	if n.Kind == yaml.AliasNode || reflect.PointerTo(t).Implements(typeOfUnmarshaler) {
		// An alias is decoded whole, by yaml.v3, which bounds what
		// aliases expand to; an UnmarshalYAML says itself what it wants,
		// and the keys it decodes into are checked first, each at its
		// place.
		if k, ok := reflect.TypeAssert[KnownKeyser](reflect.New(t)); ok && n.Kind == yaml.MappingNode {
			if kt := k.KnownKeys(); kt.Kind() == reflect.Struct {
				if n = prune(n, kt, path, errs); n == nil {
					return nil
				}
			}
		}
		return probe(n, t, path, errs)
	}
	bad := func() *yaml.Node {
		*errs = append(*errs, At(n, path, mismatch(n, t)))
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return bad()
		}
		fields := yamlFields(t)
		return pruneMapping(n, path, errs, func(k, v *yaml.Node) (*yaml.Node, *yaml.Node) {
			if k.Value == "<<" {
				return k, v // yaml.v3 merges it, and says what is wrong
			}
			ft, known := fields[k.Value]
			if !known {
				return nil, nil
			}
			return k, prune(v, ft, Join(path, k.Value), errs)
		})
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return bad()
		}
		return pruneMapping(n, path, errs, func(k, v *yaml.Node) (*yaml.Node, *yaml.Node) {
			p := Join(path, k.Value)
			if k = prune(k, t.Key(), p, errs); k == nil {
				return nil, nil
			}
			return k, prune(v, t.Elem(), p, errs)
		})
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return bad()
		}
		c := *n
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, e := range n.Content {
			// A bad item is a zero one, not gone, so that the others keep
			// their index, by which the problems found later are placed.
			if c.Content[i] = prune(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), errs); c.Content[i] == nil {
				c.Content[i] = zero(t.Elem(), e)
			}
		}
		return &c
	case reflect.Interface:
		return n
	case reflect.String:
		if t == typeOfString && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
			return n // text is a string: no need to try it
		}
	}
	return probe(n, t, path, errs)
}

// pruneMapping returns a copy of the mapping n (at path) with the pairs
// keep makes of its pairs, the last of a key given twice only; a pair
// with a nil node is left out.
func pruneMapping(n *yaml.Node, path string, errs *[]error, keep func(k, v *yaml.Node) (*yaml.Node, *yaml.Node)) *yaml.Node {
	c := *n
	c.Content = nil
	over := overridden(n, path, errs)
	for i := 0; i+1 < len(n.Content); i += 2 {
		if over[i] {
			continue
		}
		if k, v := keep(n.Content[i], n.Content[i+1]); k != nil && v != nil {
			c.Content = append(c.Content, k, v)
		}
	}
	return &c
}

// zero is a node that decodes into t's zero value, placed at n: yaml.v3
// drops a null item of a list of structs or of strings.
func zero(t reflect.Type, n *yaml.Node) *yaml.Node {
	z := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: n.Line, Column: n.Column}
	switch t.Kind() {
	case reflect.Struct:
		z.Kind, z.Tag = yaml.MappingNode, "!!map"
	case reflect.String:
		z.Tag = "!!str"
	case reflect.Bool:
		z.Tag, z.Value = "!!bool", "false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		z.Tag, z.Value = "!!int", "0"
	case reflect.Float32, reflect.Float64:
		z.Tag, z.Value = "!!float", "0"
	}
	return z
}

// overridden reports each key the mapping n gives more than once, at its
// second place, and returns the places of those given again later (nil
// when none is): yaml.v3 refuses the whole mapping for one repeated key,
// and the last is what YAML means.
func overridden(n *yaml.Node, path string, errs *[]error) map[int]bool {
	type place struct {
		first *yaml.Node
		at    int
	}
	var over map[int]bool
	seen := make(map[string]place, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		id := strconv.Itoa(int(k.Kind)) + "\x00" + k.Value
		p, dup := seen[id]
		if dup {
			*errs = append(*errs, At(k, Join(path, k.Value), fmt.Sprintf("is given twice (also at line %d): keep one", p.first.Line)))
			if over == nil {
				over = map[int]bool{}
			}
			over[p.at] = true
		} else {
			p.first = k
		}
		p.at = i
		seen[id] = p
	}
	return over
}

// mismatch says n is not the t wanted; for text that reads as a mapping
// because of a ": " in it (- echo "a: b"), how to write it.
func mismatch(n *yaml.Node, t reflect.Type) string {
	msg := "want " + Want(t) + ", not " + Got(n)
	if t.Kind() == reflect.String && n.Kind == yaml.MappingNode && len(n.Content) == 2 &&
		n.Content[0].Kind == yaml.ScalarNode && n.Content[1].Kind == yaml.ScalarNode && n.Style&yaml.FlowStyle == 0 {
		line := n.Content[0].Value + ": " + n.Content[1].Value
		msg += fmt.Sprintf(" (the \": \" after `%s` makes a key and a value: quote the whole line, e.g. '%s')",
			n.Content[0].Value, strings.ReplaceAll(line, "'", "''"))
	}
	return msg
}

// probe decodes n into a t, returning n when it decodes, or nil after
// reporting why not.
func probe(n *yaml.Node, t reflect.Type, path string, errs *[]error) *yaml.Node {
	err := n.Decode(reflect.New(t).Interface())
	if err == nil {
		return n
	}
	var te *yaml.TypeError
	if n.Kind != yaml.AliasNode && errors.As(err, &te) && !reflect.PointerTo(t).Implements(typeOfUnmarshaler) {
		msg := mismatch(n, t)
		if isNumber(n) && isNumeric(t) {
			msg = n.Value + " is out of range here"
		}
		*errs = append(*errs, At(n, path, msg))
		return nil
	}
	*errs = append(*errs, Place(err, n, path)...)
	return nil
}

func isNumber(n *yaml.Node) bool {
	tag := n.ShortTag()
	return tag == "!!int" || tag == "!!float"
}

func isNumeric(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// Want says what a value decoded into t must be, for a person who writes
// YAML: "a whole number (e.g. 4)".
func Want(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == typeOfDuration {
		return "a duration (e.g. 90s or 2m)"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number (e.g. 4)"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, 0 or more (e.g. 4)"
	case reflect.Float32, reflect.Float64:
		return "a number (e.g. 0.5)"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "text"
	case reflect.Slice, reflect.Array:
		e := t.Elem()
		for e.Kind() == reflect.Pointer {
			e = e.Elem()
		}
		switch e.Kind() {
		case reflect.String:
			return "a list of text (e.g. [a, b], or one \"- item\" a line)"
		case reflect.Struct:
			return "a list of mappings (one \"- key: value\" item each)"
		}
		return "a list"
	case reflect.Map:
		if t.Elem().Kind() == reflect.String {
			return "a mapping of names to text (e.g. {NAME: value})"
		}
		return "a mapping (name: value)"
	case reflect.Struct:
		if keys := fieldNames(t); len(keys) > 0 {
			return "a mapping (keys such as " + strings.Join(keys[:min(3, len(keys))], ", ") + ")"
		}
		return "a mapping (key: value)"
	}
	return "another kind of value"
}

// fieldNames are t's YAML keys, in order, each with its colon.
func fieldNames(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" || opts == "inline" {
			continue
		}
		out = append(out, cmp.Or(name, strings.ToLower(f.Name))+":")
	}
	return out
}

// Got says what n is, for a person: `the text "many"`, "a list".
func Got(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 40 {
			v = v[:37] + "..."
		}
		switch n.ShortTag() {
		case "!!str":
			return "the text " + strconv.Quote(v)
		case "!!int", "!!float":
			return "the number " + v
		case "!!bool":
			return v
		case "!!null":
			return "nothing"
		}
		return strconv.Quote(v)
	}
	return "a document"
}

// plainGot says what yaml.v3 (or Friendly) says was given, with the value.
var plainGot = map[string]string{
	"!!str": "the text %q", "text": "the text %q",
	"!!int": "the number %s", "!!float": "the number %s", "a number": "the number %s",
	"!!bool": "%s", "true/false": "%s",
	"!!seq": "a list", "a list": "a list", "!!map": "a mapping", "a mapping": "a mapping", "!!null": "nothing",
}

// plainWant says the types of yaml.v3's errors (and Friendly's words for
// them) as Want does.
var plainWant = map[string]string{
	"int": "a whole number (e.g. 4)", "int64": "a whole number (e.g. 4)", "an integer": "a whole number (e.g. 4)",
	"uint64": "a whole number, 0 or more (e.g. 4)", "float64": "a number (e.g. 0.5)", "a number": "a number (e.g. 0.5)",
	"string": "text", "text": "text", "bool": "true or false", "true/false": "true or false",
	"time.Duration":     "a duration (e.g. 90s or 2m)",
	"map[string]string": "a mapping of names to text (e.g. {NAME: value})", "a mapping of strings": "a mapping of names to text (e.g. {NAME: value})",
	"[]string": "a list of text (e.g. [a, b])", "a list of strings": "a list of text (e.g. [a, b])",
}

var (
	unmarshalRe = regexp.MustCompile("^cannot unmarshal (!![a-z]+|text|a number|a list|a mapping|true/false)(?: `(.*)`)? into (.+)$")
	duplicateRe = regexp.MustCompile(`^mapping key (".*") already defined at line (\d+)$`)
)

// Plain says a type error of yaml.v3, as it comes or as Friendly says it,
// the way Decode says its own: `want a whole number (e.g. 4), not the
// text "x"`, with no Go type's name.
func Plain(s string) string {
	if m := duplicateRe.FindStringSubmatch(s); m != nil {
		return fmt.Sprintf("%s is given twice (also at line %s): keep one", m[1], m[2])
	}
	m := unmarshalRe.FindStringSubmatch(s)
	if m == nil {
		return s
	}
	got := plainGot[m[1]]
	if strings.Contains(got, "%") {
		got = fmt.Sprintf(got, m[2])
	}
	typ := strings.TrimLeft(m[3], "*")
	want, ok := plainWant[typ]
	switch {
	case ok:
	case strings.HasPrefix(typ, "[]"):
		want = "a list"
	case strings.HasPrefix(typ, "map["):
		want = "a mapping"
	default: // a type of the program's own, whose name means nothing here
		return got + " is the wrong kind of value here"
	}
	return "want " + want + ", not " + got
}

// backticked is the value yaml.v3 quotes in its type errors.
var backticked = regexp.MustCompile("`([^`]*)`")

// quoted is a value quoted in an *Error's message.
var quoted = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)

// Place returns the problems of err, from decoding n (at key path path),
// each an *Error placed at its node with its key path: yaml.v3's type
// errors name only a line, and an UnmarshalYAML's *Error no key path;
// their words become the user's (Plain).
func Place(err error, n *yaml.Node, path string) []error {
	var out []error
	place := func(c Error) {
		if c.Field == "" {
			raw := c.Msg
			c.Msg = Plain(c.Msg)
			hint := hintOf(raw, c.Msg)
			if c.Line == 0 {
				c.Line, c.Col, c.Field = n.Line, n.Column, path
			} else if at, p := locate(n, path, c.Line, c.Col, hint); at != nil {
				c.Col, c.Field = at.Column, p
			}
		}
		out = append(out, &c)
	}
	flatten(err, place, func(s string) {
		c := Error{Msg: s}
		if sub := lineRe.FindStringSubmatch(s); sub != nil {
			c.Line, _ = strconv.Atoi(sub[1])
			c.Msg = sub[2]
		}
		place(c)
	}, func(err error) {
		place(Error{Msg: strings.TrimPrefix(err.Error(), "yaml: ")})
	})
	return out
}

// hintOf is what places a type error, raw as it came and msg as Plain
// says it: the value it quotes, else the kind it was given ("a list").
func hintOf(raw, msg string) string {
	if m := backticked.FindStringSubmatch(raw); m != nil {
		return m[1]
	}
	if m := quoted.FindStringSubmatch(raw); m != nil {
		s, _ := strconv.Unquote(`"` + m[1] + `"`)
		return s
	}
	for _, k := range []string{"a list", "a mapping"} {
		if strings.HasPrefix(msg, k+" ") || strings.HasSuffix(msg, "not "+k) {
			return k
		}
	}
	return ""
}

// locate finds the node of n's tree at line (and col, when not 0) and its
// key path: the node at that very place, else the value on that line that
// reads hint, else the key that does, else the line's first value.
func locate(n *yaml.Node, path string, line, col int, hint string) (*yaml.Node, string) {
	// "… a list …" names the kind of the node it is about.
	var kind yaml.Kind
	switch {
	case strings.HasPrefix(hint, "a list"):
		kind, hint = yaml.SequenceNode, ""
	case strings.HasPrefix(hint, "a mapping"):
		kind, hint = yaml.MappingNode, ""
	}
	type cand struct {
		n    *yaml.Node
		path string
		key  bool
	}
	var onLine []cand
	var visit func(n *yaml.Node, path string, key bool)
	visit = func(n *yaml.Node, path string, key bool) {
		if n.Line == line {
			onLine = append(onLine, cand{n, path, key})
		}
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := Join(path, n.Content[i].Value)
				visit(n.Content[i], p, true)
				visit(n.Content[i+1], p, false)
			}
		case yaml.SequenceNode:
			for i, e := range n.Content {
				visit(e, fmt.Sprintf("%s[%d]", path, i), false)
			}
		}
	}
	visit(n, path, false)
	for _, pick := range []func(c cand) bool{
		func(c cand) bool { return col > 0 && !c.key && c.n.Column == col },
		func(c cand) bool { return hint != "" && !c.key && c.n.Kind == yaml.ScalarNode && c.n.Value == hint },
		func(c cand) bool { return hint != "" && c.key && c.n.Value == hint },
		func(c cand) bool { return kind != 0 && !c.key && c.n.Kind == kind },
		func(c cand) bool { return !c.key && c.n.Kind == yaml.ScalarNode },
		func(c cand) bool { return true },
	} {
		for _, c := range onLine {
			if pick(c) {
				return c.n, c.path
			}
		}
	}
	return nil, ""
}

// Block strictly decodes n, a block of the manifest at path, into a T: null
// is an empty one, an alias its target; anything else must be a mapping
// (such as example) with no key T lacks. m is the mapping (nil for null),
// where the caller places its own checks; each problem is an *Error at its
// node.
func Block[T any](n *yaml.Node, path, example string) (s T, m *yaml.Node, errs []error) {
	v := n
	if v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	switch {
	case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null":
		return s, nil, nil
	case v.Kind != yaml.MappingNode:
		return s, nil, []error{At(n, path, "must be a mapping such as "+example+", not a "+KindName(v))}
	}
	if errs := UnknownKeys(n, reflect.TypeFor[T](), path); len(errs) > 0 {
		return s, nil, errs
	}
	if err := n.Decode(&s); err != nil {
		var zero T
		return zero, nil, InFile(err, "", Friendly)
	}
	return s, v, nil
}
