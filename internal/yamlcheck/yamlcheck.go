// Package yamlcheck is forge's one strict reading of YAML: every problem is
// an *Error naming the file, line, column and key path, and unknown keys are
// found by walking the yaml.Node tree beside the Go type, with a hint.
package yamlcheck

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// Error is one problem in a YAML file.
type Error struct {
	File      string
	Line, Col int
	// Field is the key path, e.g. "candidates[0].timeout".
	Field string
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Line > 0 && e.Col > 0 {
		fmt.Fprintf(&b, ":%d", e.Col)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// At is an Error about node n (nil: no position), at key path field.
func At(n *yaml.Node, field, msg string) *Error {
	e := &Error{Field: field, Msg: msg}
	if n != nil {
		e.Line, e.Col = n.Line, n.Column
	}
	return e
}

// Under is an Error about the node keys lead to from n, whose path is path
// ("daytona", "resources", "cpu" make "daytona.resources.cpu"), placed at
// that node, or the last one on the way.
func Under(n *yaml.Node, path, msg string, keys ...any) *Error {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			path = Join(path, k)
			if n != nil && n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == k {
						n = n.Content[i+1]
						break
					}
				}
			}
		case int:
			path += fmt.Sprintf("[%d]", k)
			if n != nil && n.Kind == yaml.SequenceNode && k >= 0 && k < len(n.Content) {
				n = n.Content[k]
			}
		default:
			panic(fmt.Sprintf("yamlcheck.Under: key %v is neither a string nor an int", k))
		}
	}
	return At(n, path, msg)
}

// KindName names n's kind for a person: "mapping", "list", "plain value"...
func KindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "plain value"
	case yaml.AliasNode:
		return "alias"
	}
	return "document"
}

// KnownKeyser says what a custom UnmarshalYAML's node decodes into, so
// UnknownKeys can walk it.
type KnownKeyser interface{ KnownKeys() reflect.Type }

var (
	typeOfNode        = reflect.TypeFor[yaml.Node]()
	typeOfUnmarshaler = reflect.TypeFor[yaml.Unmarshaler]()
)

// UnknownKeys returns an *Error for every mapping key of n that t has no
// field for, with its position and the nearest known key: yaml.v3's
// KnownFields gives neither a column nor every error, nor applies to
// Node.Decode. also names keys decoded elsewhere, which are not walked.
func UnknownKeys(n *yaml.Node, t reflect.Type, path string, also ...string) []error {
	var errs []error
	walk(n, t, path, also, &errs)
	return errs
}

// UnknownKeysBelow is UnknownKeys for an open mapping n, whose own keys may
// be any (a task's fields): only the values of the keys t has are walked.
func UnknownKeysBelow(n *yaml.Node, t reflect.Type, path string) []error {
	var errs []error
	fields := yamlFields(t)
	for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
		if ft, ok := fields[n.Content[i].Value]; ok {
			walk(n.Content[i+1], ft, Join(path, n.Content[i].Value), nil, &errs)
		}
	}
	return errs
}

func walk(n *yaml.Node, t reflect.Type, path string, also []string, errs *[]error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == typeOfNode || reflect.PointerTo(t).Implements(typeOfUnmarshaler) {
		if k, ok := reflect.TypeAssert[KnownKeyser](reflect.New(t)); ok {
			walk(n, k.KnownKeys(), path, also, errs)
		}
		return
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch {
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		fields := yamlFields(t)
		if len(also) > 0 {
			fields = maps.Clone(fields)
			for _, k := range also {
				fields[k] = nil
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Value == "<<" {
				continue // merge key; yaml.v3 checks what it merges
			}
			ft, ok := fields[k.Value]
			if !ok {
				*errs = append(*errs, At(k, Join(path, k.Value), unknownKeyMsg(k.Value, fields)))
				continue
			}
			if ft != nil {
				walk(val, ft, Join(path, k.Value), nil, errs)
			}
		}
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && n.Kind == yaml.SequenceNode:
		for i, e := range n.Content {
			walk(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), nil, errs)
		}
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			walk(n.Content[i+1], t.Elem(), Join(path, n.Content[i].Value), nil, errs)
		}
	}
}

// Join appends key to a key path.
func Join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fieldsOf holds yamlFields' answer by type: a tasks file asks it for
// every task.
var fieldsOf sync.Map // reflect.Type → map[string]reflect.Type

// yamlFields are the YAML keys of the struct type t, each with its field's
// type; the map is shared: not to be changed.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldsOf.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if opts == "inline" && f.Type.Kind() == reflect.Struct {
			maps.Copy(out, yamlFields(f.Type)) // its keys are the parent's
			continue
		}
		out[cmp.Or(name, strings.ToLower(f.Name))] = f.Type
	}
	fieldsOf.Store(t, out)
	return out
}

func unknownKeyMsg(key string, fields map[string]reflect.Type) string {
	names := slices.Sorted(maps.Keys(fields))
	if best := Nearest(key, names); best != "" {
		return fmt.Sprintf("unknown key %q (did you mean %q?)", key, best)
	}
	return fmt.Sprintf("unknown key %q (known: %s)", key, strings.Join(names, ", "))
}

// Nearest is the name of names nearest to key (a typo's two edits away at
// most), "" when none is that near.
func Nearest(key string, names []string) string {
	best, bestD := "", 3
	for _, name := range names {
		if d := editDistance(key, name); d < bestD || (d == bestD && d < 3 && name < best) {
			best, bestD = name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// tagWords says yaml.v3's tags in words.
var tagWords = strings.NewReplacer("!!str", "text", "!!int", "a number", "!!float", "a number",
	"!!seq", "a list", "!!map", "a mapping", "!!bool", "true/false")

// typeWords says Go types in words.
var typeWords = map[string]string{
	"int": "an integer", "int64": "an integer", "float64": "a number", "string": "text", "bool": "true/false",
	"map[string]string": "a mapping of strings", "[]string": "a list of strings",
}

// qualifier is the package that qualifies a Go type's name ("forge.").
var qualifier = regexp.MustCompile(`\b[a-z][a-z0-9_]*\.`)

// Friendly rewords a yaml.v3 type error for a person who writes YAML, not Go:
// "cannot unmarshal !!str `x` into int" becomes "... text `x` into an integer".
func Friendly(s string) string {
	i := strings.LastIndex(s, " into ")
	if i < 0 {
		return tagWords.Replace(s)
	}
	typ := s[i+len(" into "):]
	if w, ok := typeWords[typ]; ok {
		typ = w
	} else {
		typ = qualifier.ReplaceAllString(typ, "")
	}
	return tagWords.Replace(s[:i]) + " into " + typ
}

// lineRe reads the position yaml.v3 puts in its own messages.
var lineRe = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// InFile returns the problems err holds, each as an *Error of file, placed at
// the line yaml.v3 names when it names one. rewrite, if set, rewords the
// messages of errors that are not *Error values already.
func InFile(err error, file string, rewrite func(string) string) []error {
	if err == nil {
		return nil
	}
	if rewrite == nil {
		rewrite = func(s string) string { return s }
	}
	var out []error
	flatten(err, func(c Error) {
		c.File = cmp.Or(c.File, file)
		out = append(out, &c)
	}, func(line string) {
		out = append(out, fromYAML(file, line, rewrite))
	}, func(err error) {
		out = append(out, fromYAML(file, err.Error(), rewrite))
	})
	return out
}

// flatten is the one walk Place and InFile make of a decoder's error: each
// *Error it holds (through joins and wrapping) to onError, a copy; each
// line of a yaml.TypeError to onLine; anything else to onOther.
func flatten(err error, onError func(Error), onLine func(string), onOther func(error)) {
	var ye *Error
	var te *yaml.TypeError
	joined, isJoined := err.(interface{ Unwrap() []error })
	switch {
	case errors.As(err, &ye) && ye == err:
		onError(*ye)
	case isJoined:
		for _, e := range joined.Unwrap() {
			flatten(e, onError, onLine, onOther)
		}
	case errors.As(err, &te):
		for _, s := range te.Errors {
			onLine(s)
		}
	case errors.As(err, &ye):
		flatten(ye, onError, onLine, onOther)
	default:
		onOther(err)
	}
}

// fromYAML places a message of yaml.v3 ("line 3: …") at its line.
func fromYAML(file, msg string, rewrite func(string) string) error {
	msg = strings.TrimPrefix(msg, "yaml: ")
	if sub := lineRe.FindStringSubmatch(msg); sub != nil {
		line, _ := strconv.Atoi(sub[1])
		return &Error{File: file, Line: line, Col: 1, Msg: rewrite(sub[2])}
	}
	return &Error{File: file, Msg: rewrite(msg)}
}
