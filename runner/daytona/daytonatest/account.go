package daytonatest

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// account is the user an image's USER names, as its /etc/passwd (and
// /etc/group) resolve it: who its later build steps, and every process of
// a sandbox made from it, run as. The real service starts a sandbox's
// daemon as its image's user (the container's USER; the API's "user" only
// becomes DAYTONA_SANDBOX_USER), so its commands, its files and its home
// are that user's.
type account struct {
	name     string // as USER gave it, or the passwd entry's name for a uid
	uid, gid uint32
	home     string // the passwd entry's; "/" when it has none, as Docker's
}

// lookupAccount resolves USER's value ("name", "uid", "name:group",
// "uid:gid") in a root's passwd and group files, as Docker resolves it when
// a step runs: a name must be in passwd; a uid needs no entry (then its
// group is 0 and its home /).
func lookupAccount(spec string, passwd, group []byte) (*account, error) {
	user, grp, hasGroup := strings.Cut(spec, ":")
	a := &account{name: user, home: "/"}
	found := false
	for _, f := range colonLines(passwd, 7) {
		if f[0] == user || f[2] == user {
			uid, err1 := strconv.ParseUint(f[2], 10, 32)
			gid, err2 := strconv.ParseUint(f[3], 10, 32)
			if err1 != nil || err2 != nil {
				continue
			}
			a.name, a.uid, a.gid, a.home, found = f[0], uint32(uid), uint32(gid), cmp.Or(f[5], "/"), true
			break
		}
	}
	if !found {
		uid, err := strconv.ParseUint(user, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("unable to find user %s: no matching entries in passwd file", user)
		}
		a.uid = uint32(uid)
	}
	if hasGroup {
		// A gid, else the gid of the first entry of that name that has one.
		gid, err := strconv.ParseUint(grp, 10, 32)
		for _, f := range colonLines(group, 4) {
			if err != nil && f[0] == grp {
				gid, err = strconv.ParseUint(f[2], 10, 32)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("unable to find group %s: no matching entries in group file", grp)
		}
		a.gid = uint32(gid)
	}
	return a, nil
}

// colonLines are a passwd-style file's entries with at least n fields.
func colonLines(b []byte, n int) [][]string {
	var out [][]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := strings.Split(sc.Text(), ":"); len(f) >= n && !strings.HasPrefix(f[0], "#") {
			out = append(out, f)
		}
	}
	return out
}

// rootFile is the content of a root's /etc file: the root's own copy when
// its image wrote one (the upper layer), else this machine's, which the
// root's /etc stands on.
func rootFile(root, name string) []byte {
	if b, err := os.ReadFile(filepath.Join(root, "etc", name)); err == nil {
		return b
	}
	b, _ := os.ReadFile(filepath.Join("/etc", name))
	return b
}
