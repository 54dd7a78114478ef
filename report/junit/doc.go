// Package junit writes a forge run as JUnit XML, the format CI systems
// (Jenkins, GitLab, GitHub test reporters) show as test results: tagged
// structs for the document, New to build it from a record.Record, Encode and
// Write to print it. Times come from the record, or from an injectable clock,
// so the output is deterministic in tests.
//
// It knows the JUnit vocabulary and the result record, nothing about other
// report formats, terminals or how a run is played. testdata/junit.xsd is the
// schema its tests hold the output to.
package junit
