package local

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/forge-run/forge/runner"
)

// workdirLook is what a candidate saw of its working directory.
type workdirLook struct {
	Ino     uint64   `json:"ino"`
	Mode    int      `json:"mode"`
	Owner   int      `json:"owner"`
	Entries []string `json:"entries"`
	Tmp     []string `json:"tmp"`
	Xattrs  []string `json:"xattrs"`
}

// lookJob looks at its working directory, then litters it (and, with
// xattr, marks it with an extended attribute, which forge cannot tell
// from one the file system gives every file).
func lookJob(t *testing.T, xattr bool) runner.Job {
	src := `import json, os, stat, sys
st = os.stat(".")
look = {"ino": st.st_ino, "mode": stat.S_IMODE(st.st_mode), "owner": st.st_uid,
        "entries": sorted(os.listdir(".")), "tmp": os.listdir("tmp"), "xattrs": os.listxattr(".")}
os.makedirs("deep/er", exist_ok=True)
open("deep/er/f", "w").write("x")
open("tmp/t", "w").write("x")
os.chmod("deep", 0o500)
os.chmod(".", 0o755)
if ` + map[bool]string{true: "True", false: "False"}[xattr] + `:
    os.setxattr(".", "user.forge-test", b"1")
json.dump(look, open(sys.argv[2], "w"))
`
	return pyJob(t, "look", src)
}

// TestWorkdirKeptForTheNextJobIsAsNew: where nothing of a job outlives it,
// its working directory may serve the next job, emptied and as new (mode,
// owner, tmp/ empty); one the job marked in a way forge cannot put back is
// removed instead; Close removes what was kept.
func TestWorkdirKeptForTheNextJobIsAsNew(t *testing.T) {
	for _, tier := range []Containment{ContainPIDNamespace, ContainCgroup} {
		t.Run(string(tier), func(t *testing.T) {
			r := tierRunner(t, tier, Options{})
			look := func(xattr bool) workdirLook {
				t.Helper()
				res := mustRun(t, r, lookJob(t, xattr))
				assertKind(t, res, runner.ErrNone)
				var l workdirLook
				if err := json.Unmarshal(res.Artifact, &l); err != nil {
					t.Fatalf("artifact %q: %v", res.Artifact, err)
				}
				r.waitRemovers() // the removal (or emptying) done
				return l
			}
			first := look(false)
			second := look(true)
			third := look(false)
			want := []string{"look.py", "tmp"}
			for i, l := range []workdirLook{first, second, third} {
				if l.Mode != 0o700 || len(l.Tmp) != 0 || len(l.Entries) != 2 || l.Entries[0] != want[0] || l.Entries[1] != want[1] {
					t.Errorf("job %d saw %+v; want mode 700, %q and an empty tmp/", i+1, l, want)
				}
				if r.users != nil && l.Owner < int(r.users.base) {
					t.Errorf("job %d: its working directory is uid %d's, not its own", i+1, l.Owner)
				}
			}
			if first.Ino != second.Ino && !r.fresh.Load()[0].xattrs { // every file has some (SELinux): none is kept
				t.Errorf("the first job's working directory was not kept (inode %d, then %d)", first.Ino, second.Ino)
			}
			if len(third.Xattrs) != 0 {
				t.Errorf("the job after one that set an extended attribute on its working directory saw %q", third.Xattrs)
			}
			r.Close()
			if left := leftovers(t, r.opts.TempDir); len(left) != 0 {
				t.Errorf("after Close, %s holds %q", r.opts.TempDir, left)
			}
		})
	}
}

// TestKeptWorkdirMustBeTheOneMade: a working directory replaced meanwhile
// (by a job that owned its name) is never kept.
func TestKeptWorkdirMustBeTheOneMade(t *testing.T) {
	r := tierRunner(t, ContainPIDNamespace, Options{})
	w, made, err := r.newWorkdir("forge-test-")
	if err != nil || !made {
		t.Fatalf("newWorkdir: %v, made %v", err, made)
	}
	if err := os.Mkdir(w.path+"/tmp", 0o700); err != nil {
		t.Fatal(err)
	}
	r.noteNew(&w)
	if err := os.Rename(w.path, w.path+"-moved"); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(w.path + "-moved")
	if err := os.MkdirAll(w.path+"/tmp", 0o700); err != nil {
		t.Fatal(err)
	}
	r.recycleWorkdir(w)
	if len(r.spares.items) != 0 {
		t.Errorf("kept %+v, which is not the directory made", r.spares.items)
	}
	if _, err := os.Lstat(w.path); err == nil {
		t.Errorf("%s is still there", w.path)
	}
}
