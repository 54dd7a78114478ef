package local

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/forge-run/forge/internal/linux"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/local/localtest"
	"golang.org/x/sys/unix"
)

// TestKeptNamespaceNamesEachJobsUser: where mount namespaces are kept,
// jobs one after the other start in the same one, and each finds its own
// user named, at home in its own working directory.
func TestKeptNamespaceNamesEachJobsUser(t *testing.T) {
	r := tierRunner(t, ContainPIDNamespace, Options{})
	if r.users == nil || !r.platform.readOnly() {
		t.Skip("jobs get no /etc/passwd of their own here")
	}
	type look struct {
		NS   string `json:"ns"`
		UID  int    `json:"uid"`
		Name string `json:"name"`
		Home bool   `json:"home"`
	}
	var looks []look
	for range 3 {
		job := pyJob(t, "who", `import getpass, json, os, pwd, sys
json.dump({"ns": os.readlink("/proc/self/ns/mnt"), "uid": os.getuid(), "name": getpass.getuser(),
           "home": pwd.getpwuid(os.getuid()).pw_dir == os.getcwd()}, open(sys.argv[2], "w"))
`)
		res := mustRun(t, r, job)
		assertKind(t, res, runner.ErrNone)
		r.waitRemovers() // its namespace is kept once its /proc is unmounted, beside the next job
		var l look
		if err := json.Unmarshal(res.Artifact, &l); err != nil {
			t.Fatalf("artifact %q: %v", res.Artifact, err)
		}
		looks = append(looks, l)
	}
	for i, l := range looks {
		if l.Name != "forge" || !l.Home || l.UID == os.Getuid() {
			t.Errorf("job %d: %+v; want its own uid named forge, at home in its working directory", i+1, l)
		}
		if i > 0 && l.UID == looks[i-1].UID {
			t.Errorf("jobs %d and %d ran as the same uid %d", i, i+1, l.UID)
		}
	}
	if r.keepsNamespaces() && (looks[1].NS != looks[0].NS || looks[2].NS != looks[0].NS) {
		t.Errorf("mount namespaces %s, %s, %s: want the first kept for the next jobs", looks[0].NS, looks[1].NS, looks[2].NS)
	}
}

// TestKeptNamespaceLetsAnEndedJobsProcGo: where jobs get a /proc of their
// own (the Runner hides directories), the ended job's is unmounted from the
// kept namespace once the job ended, not left for the next job's start to
// take down; and the next job there sees its own.
func TestKeptNamespaceLetsAnEndedJobsProcGo(t *testing.T) {
	r := tierRunner(t, ContainPIDNamespace, Options{Hide: []string{localtest.TempDir(t)}})
	if r.users == nil || !r.keepsNamespaces() {
		t.Skip("no mount namespace is kept here")
	}
	for i := range 3 {
		job := pyJob(t, "look", `import os, sys
open(sys.argv[2], "w").write(str(os.getpid() == int(os.readlink("/proc/self"))))
`)
		res := mustRun(t, r, job)
		assertKind(t, res, runner.ErrNone)
		if string(res.Artifact) != "True" {
			t.Errorf("job %d: its /proc/self is not itself (%q)", i+1, res.Artifact)
		}
		r.waitRemovers() // the slot is back once the work beside the next job is done
		r.slots.mu.Lock()
		free := slices.Clone(r.slots.items)
		r.slots.mu.Unlock()
		if len(free) == 0 {
			t.Fatalf("job %d: no mount namespace kept", i+1)
		}
		for _, s := range free {
			if procMounted(t, s) {
				t.Errorf("job %d ended: the kept namespace still has a /proc mounted", i+1)
			}
		}
	}
}

// procMounted reports whether something is mounted on /proc in s's
// namespace, from a thread that enters it and ends.
func procMounted(t *testing.T, s *nsSlot) bool {
	t.Helper()
	var mounted bool
	err := linux.OnLockedThread(func() (bool, error) {
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			return false, err
		}
		if err := unix.Setns(s.fd, unix.CLONE_NEWNS); err != nil {
			return false, err
		}
		var proc, root unix.Stat_t
		if err := unix.Stat("/proc", &proc); err != nil {
			return false, err
		}
		if err := unix.Stat("/", &root); err != nil {
			return false, err
		}
		mounted = proc.Dev != root.Dev
		return false, nil // the thread ends
	})
	if err != nil {
		t.Fatal(err)
	}
	return mounted
}
