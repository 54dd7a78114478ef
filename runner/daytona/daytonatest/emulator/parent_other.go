//go:build !linux

package main

// endWithParent does nothing here: only Linux tells a process its parent
// ended; stop the emulator itself (Ctrl-C, SIGTERM).
func endWithParent() {}
