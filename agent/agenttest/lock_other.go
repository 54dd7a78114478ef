//go:build !unix

package agenttest

func lockFile(path string) (unlock func(), err error) { return nil, errNoLock }
