package scoring

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"

	"github.com/forge-run/forge/internal/yamlcheck"
	"gopkg.in/yaml.v3"
)

// KnownKeys tells the manifest checker what the scoring: node decodes into.
func (Config) KnownKeys() reflect.Type { return reflect.TypeFor[[]Scorer]() }

// UnmarshalYAML decodes the scoring: list strictly (unknown keys and equals:
// null are *yamlcheck.Error values); a bare type name is a scorer of that type.
func (c *Config) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.ShortTag() == "!!null" {
		c.Scorers = nil
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return yamlcheck.At(n, "scoring", "must be a list of scorers, e.g. [{type: success}, {type: runtime, weight: 0.2}]")
	}
	var errs []error
	scorers := make([]Scorer, 0, len(n.Content))
	for i, item := range n.Content {
		if item.Kind == yaml.AliasNode && item.Alias != nil {
			item = item.Alias
		}
		if item.Kind == yaml.ScalarNode && item.ShortTag() == "!!str" {
			scorers = append(scorers, Scorer{Type: Type(item.Value)})
			continue
		}
		path := fmt.Sprintf("scoring[%d]", i)
		errs = append(errs, yamlcheck.UnknownKeys(item, reflect.TypeFor[Scorer](), path)...)
		errs = append(errs, nullEquals(item, path)...)
		var s Scorer
		if err := item.Decode(&s); err != nil {
			errs = append(errs, err)
			continue
		}
		scorers = append(scorers, s)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	c.Scorers = scorers
	return nil
}

// nullEquals reports the checks that say equals: null, which Check cannot hold.
func nullEquals(scorer *yaml.Node, path string) []error {
	var errs []error
	for i := 0; scorer.Kind == yaml.MappingNode && i+1 < len(scorer.Content); i += 2 {
		if k, v := scorer.Content[i], scorer.Content[i+1]; k.Value == "checks" && v.Kind == yaml.SequenceNode {
			for j, check := range v.Content {
				for l := 0; check.Kind == yaml.MappingNode && l+1 < len(check.Content); l += 2 {
					if ck, cv := check.Content[l], check.Content[l+1]; ck.Value == "equals" && cv.ShortTag() == "!!null" {
						errs = append(errs, yamlcheck.At(ck, fmt.Sprintf("%s.checks[%d].equals", path, j), "null is not supported"))
					}
				}
			}
		}
	}
	return errs
}

// jsonValue converts a YAML-decoded value into encoding/json's form.
func jsonValue(v any) (any, error) {
	switch v := v.(type) {
	case nil, bool, string:
		return v, nil
	case int:
		return float64(v), nil
	case int64:
		return float64(v), nil
	case uint64:
		return float64(v), nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%v is not a JSON number", v)
		}
		return v, nil
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%s is not a finite number", v)
		}
		return f, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			j, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = j
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			j, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			out[k] = j
		}
		return out, nil
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("object key %v is not a string", k)
			}
			m[ks] = e
		}
		return jsonValue(m)
	}
	return nil, fmt.Errorf("%T is not a JSON value", v)
}
