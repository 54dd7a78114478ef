//go:build !linux

package daytonatest

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"sync"
)

// RootFS says whether this emulator gives every sandbox and snapshot build
// a root file system of its own: never off Linux.
func RootFS() bool { return false }

func rootFSUnavailable() error { return errNoRootFS }

var errNoRootFS = errors.New("root file systems need Linux")

type bindMount struct{ src, dst string }

// fsRoot is never made off Linux.
type fsRoot struct {
	done chan struct{}
}

func startRoot(dir, work, home string, binds []bindMount, ownNet bool, wg *sync.WaitGroup) (*fsRoot, error) {
	return nil, errNoRootFS
}

func copyRoot(src, dst string) error { return errNoRootFS }

func (r *fsRoot) stop()                                               {}
func (r *fsRoot) as(a *account, f func() error) error                 { return f() }
func (r *fsRoot) start(cmd *exec.Cmd) error                           { return errNoRootFS }
func (r *fsRoot) alive(pid int) bool                                  { return false }
func (r *fsRoot) open(p string) (*os.File, error)                     { return nil, errNoRootFS }
func (r *fsRoot) create(p string, perm fs.FileMode) (*os.File, error) { return nil, errNoRootFS }
func (r *fsRoot) mkdirAll(p string, perm fs.FileMode) error           { return errNoRootFS }
func (r *fsRoot) symlink(target, p string) error                      { return errNoRootFS }
func (r *fsRoot) remove(p string)                                     {}

func (r *fsRoot) command(a *account, command, cwd string, env []string) *exec.Cmd {
	return exec.Command("false")
}
