//go:build linux && !amd64

package linux

import (
	"errors"
	"os"
)

// HaveBuiltinInit is false: no built-in init for this architecture.
func HaveBuiltinInit() bool { return false }

func startBuiltinInit(*os.File, uintptr) (*os.Process, error) { return nil, errors.ErrUnsupported }
