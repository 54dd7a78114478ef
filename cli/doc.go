// Package cli is forge's command line: the cobra commands and their flags,
// signal handling, the choice of backend, progress on stderr and reports on
// stdout. It is the one place where errors become exit codes (docs/exit-codes.md).
package cli
