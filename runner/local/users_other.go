//go:build !linux

package local

import "os/exec"

// users: only on Linux do jobs get uids of their own; elsewhere they run as
// forge's user.
type users struct{}

func newUsers(string) (*users, error) { return nil, nil }

type jobUser struct{ uid, gid uint32 }

func (*users) builder() *jobUser          { return nil }
func (*users) acquire() (*jobUser, error) { return nil, nil }
func (*users) release(*jobUser)           {}
func (*users) describe() string           { return "" }

func (*users) removeLeftovers(*jobUser, ...string) error { return nil }

func runAs(*exec.Cmd, *jobUser)                 {}
func give(string, *jobUser) error               { return nil }
func searchable(string, *jobUser) error         { return nil }
func may(string, *jobUser, uint32) error        { return nil }
func reachablePath(p string, _ *jobUser) string { return p }
func removeEtc([]etcFile)                       {}
func etcParent(fallback string) string          { return fallback }

// systemEtc: jobs get no /etc/passwd of their own here.
type systemEtc struct{}

func (*systemEtc) etcFiles(*jobUser, string, string) ([]etcFile, error) { return nil, nil }
func (*systemEtc) rewriteEtc([]etcFile, *jobUser, string) error         { return nil }
