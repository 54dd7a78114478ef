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

// compileResults compiles the results schema, with "format" asserted so a
// malformed timestamp is an error.
func compileResults() (*jsonschema.Schema, error) {
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
	s, err := c.Compile(ResultsURL)
	if err != nil {
		return nil, fmt.Errorf("compile results.schema.json: %w", err)
	}
	return s, nil
}

// ValidateResults checks that b is a results.json that conforms to the
// schema. The error lists each violation with its JSON pointer.
func ValidateResults(b []byte) error {
	s, err := compileResults()
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("results.json is not JSON: %w", err)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("results.json does not match results.schema.json: %w", err)
	}
	return nil
}
