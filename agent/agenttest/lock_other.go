//go:build !unix

package agenttest

import "errors"

func lockFile(string) (unlock func(), err error) {
	return nil, errors.New("file locks are not supported here")
}
