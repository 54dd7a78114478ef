//go:build !unix || aix

package local

import (
	"context"
	"errors"
	"os"
)

// errNoFlock: without flock concurrent forges cannot wait for a build.
var errNoFlock = errors.New("environments are built only where flock(2) is available (Linux, macOS, the BSDs, Solaris)")

func lockFile(context.Context, string, bool) (*os.File, error) { return nil, errNoFlock }

func tryLockFile(string, bool) (*os.File, error) { return nil, errNoFlock }
