//go:build linux && !amd64

package local

import (
	"errors"
	"os"
)

// No built-in init for this architecture.
func haveBuiltinInit() bool { return false }

func startBuiltinInit(*os.File) (*os.Process, error) { return nil, errors.ErrUnsupported }
