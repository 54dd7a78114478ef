//go:build !linux

package local

import "os"

// awaitExit returns at once: Wait blocks for the process itself.
func awaitExit(*os.Process) {}
