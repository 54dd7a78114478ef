// Package schema owns the JSON Schema (draft 2020-12) of results.json,
// results.schema.json beside this file, and validates documents against it.
//
// The schema is the published contract for readers of results.json (CI
// scripts, dashboards); the Go types that produce the file live in forge,
// runner and scoring, and this package's tests check that the schema names
// every field they write. It knows nothing else about a run.
package schema
