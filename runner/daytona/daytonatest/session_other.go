//go:build !linux

package daytonatest

import (
	"io"
	"os"
	"os/exec"
)

// sessionProcs is never made off Linux: sandboxes have no root there.
type sessionProcs struct{}

func (s *Server) newSessionProcs(sb *sandbox, seq int) *sessionProcs { return nil }
func (sp *sessionProcs) track(cmd *exec.Cmd)                         {}
func (sp *sessionProcs) kill()                                       {}
func (sp *sessionProcs) end()                                        {}

func newServerCgroup() string       { return "" }
func removeServerCgroup(dir string) {}

// outPipe is never made off Linux: only roots' commands have one.
type outPipe struct{ r *os.File }

func newOutPipe(w io.Writer) (*outPipe, *os.File, error) { return nil, nil, errNoRootFS }
func (o *outPipe) copy()                                 {}
func (o *outPipe) catchUp() bool                         { return true }
