//go:build !linux

package local

import "errors"

// dirShape: working directories are kept for later jobs on Linux alone.
type dirShape struct{}

func workdirShapes(string) ([2]dirShape, workdirID, error) {
	return [2]dirShape{}, workdirID{}, errors.ErrUnsupported
}

func emptyAsNew(workdirID, [2]dirShape) error { return errors.ErrUnsupported }

func renameNoReplace(string, string) error { return errors.ErrUnsupported }
