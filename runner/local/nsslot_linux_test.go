package local

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/forge-run/forge/runner"
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
