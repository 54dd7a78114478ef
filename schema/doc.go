// Package schema owns the JSON Schema of results.json (results.schema.json)
// and validates documents against it. It is the published contract for
// readers of results.json; its tests check that it names every field the Go
// types write. It knows nothing else about a run.
package schema
