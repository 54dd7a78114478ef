package schema

import (
	"bytes"
	_ "embed"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed results.schema.json
var resultsSchema []byte

// ResultsURL is the schema's $id.
const ResultsURL = "https://github.com/forge-run/forge/schema/results.schema.json"

// Results returns the JSON Schema of results.json.
func Results() []byte { return bytes.Clone(resultsSchema) }

// compileResults compiles the results schema, or its fragment, with "format"
// asserted so a malformed timestamp is an error.
func compileResults(fragment string) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(resultsSchema))
	if err != nil {
		return nil, fmt.Errorf("read results.schema.json: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(ResultsURL, doc); err != nil {
		return nil, fmt.Errorf("load results.schema.json: %w", err)
	}
	s, err := c.Compile(ResultsURL + fragment)
	if err != nil {
		return nil, fmt.Errorf("compile results.schema.json: %w", err)
	}
	return s, nil
}

// ValidateResults checks b against the schema, listing each violation with
// its JSON pointer.
func ValidateResults(b []byte) error {
	return validate(b, "", "results.json")
}

// ValidateTrial checks that b is a trials.jsonl line: one valid result.
func ValidateTrial(b []byte) error {
	return validate(b, "#/$defs/result", "a line of trials.jsonl")
}

func validate(b []byte, fragment, what string) error {
	s, err := compileResults(fragment)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%s is not JSON: %w", what, err)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("%s does not match results.schema.json: %w", what, err)
	}
	return nil
}
