package forge

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

var (
	typeOfManifest    = reflect.TypeFor[Manifest]()
	typeOfNode        = reflect.TypeFor[yaml.Node]()
	typeOfUnmarshaler = reflect.TypeFor[yaml.Unmarshaler]()
)

// checkKeys walks the YAML tree beside the Go type it decodes into and
// reports every mapping key the type does not have, with its line and column
// and the nearest known key. yaml.v3's KnownFields gives neither a column nor
// every error at once, and does not apply to Node.Decode.
func checkKeys(file string, n *yaml.Node, t reflect.Type, path string, errs *[]error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == typeOfNode || reflect.PointerTo(t).Implements(typeOfUnmarshaler) {
		if k, ok := reflect.New(t).Interface().(interface{ KnownKeys() reflect.Type }); ok {
			checkKeys(file, n, k.KnownKeys(), path, errs)
		}
		return
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch {
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Value == "<<" {
				continue // merge key; yaml.v3 checks what it merges
			}
			ft, ok := fields[k.Value]
			if !ok {
				*errs = append(*errs, &Error{File: file, Line: k.Line, Col: k.Column, Field: join(path, k.Value),
					Msg: unknownKeyMsg(k.Value, fields)})
				continue
			}
			checkKeys(file, val, ft, join(path, k.Value), errs)
		}
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && n.Kind == yaml.SequenceNode:
		for i, e := range n.Content {
			checkKeys(file, e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), errs)
		}
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			checkKeys(file, n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), errs)
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

func unknownKeyMsg(key string, fields map[string]reflect.Type) string {
	names := make([]string, 0, len(fields))
	best, bestD := "", 3
	for name := range fields {
		names = append(names, name)
		if d := editDistance(key, name); d < bestD {
			best, bestD = name, d
		}
	}
	sort.Strings(names)
	if best != "" {
		return fmt.Sprintf("unknown key %q (did you mean %q?)", key, best)
	}
	return fmt.Sprintf("unknown key %q (known: %s)", key, strings.Join(names, ", "))
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
