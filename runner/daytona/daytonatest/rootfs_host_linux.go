//go:build linux

package daytonatest

// What a root stands on: whether this machine can make roots (the probe,
// once), the host's top-level directories, a new root's skeleton, and a
// sandbox's copy of its snapshot's root.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/forge-run/forge/internal/linux"
	"golang.org/x/sys/unix"
)

// rootFSProbe is what probeRootFS found roots stand on.
var rootFSProbe struct {
	lay layout
	// init is the roots' holder, the first of the toolkit's inits that
	// works here; cp and mount are the host's.
	init      linux.Init
	cp, mount string
}

// RootFS says whether this emulator gives every sandbox and snapshot build
// a root file system of its own (see doc.go): it runs as root on Linux and
// can make mount namespaces and overlayfs mounts, and DAYTONATEST_ROOTFS
// is not "off". Decided once per process.
func RootFS() bool { return rootFSUnavailable() == nil }

// rootFSUnavailable is why roots cannot be made, nil when they can;
// probed once per process.
var rootFSUnavailable = sync.OnceValue(probeRootFS)

func probeRootFS() error {
	p := &rootFSProbe
	if os.Getenv("DAYTONATEST_ROOTFS") == "off" {
		return errors.New("turned off by DAYTONATEST_ROOTFS=off")
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("not running as root (uid %d)", os.Geteuid())
	}
	var err error
	if p.cp, err = exec.LookPath("cp"); err != nil {
		return err
	}
	if p.mount, err = exec.LookPath("mount"); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "daytonatest-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := probeOverlay(dir); err != nil {
		return err
	}
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	fd, err := openat2(dfd, "lower/f", unix.O_RDONLY, 0)
	unix.Close(dfd)
	if err != nil {
		return fmt.Errorf("openat2: %w", err)
	}
	unix.Close(fd)
	p.lay, err = hostLayout()
	return err
}

// probeOverlay finds an init that holds new mount and PID namespaces
// where an overlay can be mounted, under dir, and written through.
func probeOverlay(dir string) error {
	for _, d := range []string{"lower", "upper", "work", "merged"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "lower", "f"), nil, 0o644); err != nil {
		return err
	}
	inits := linux.Inits()
	if len(inits) == 0 {
		return errors.New("found neither bash nor cat for the PID namespace's init")
	}
	var errs []error
	for _, in := range inits {
		err := tryOverlay(in, dir)
		if err == nil {
			rootFSProbe.init = in
			return nil
		}
		errs = append(errs, fmt.Errorf("with %s as its init: %w", in.Name, err))
	}
	return fmt.Errorf("cannot mount an overlay in new mount and PID namespaces: %w", errors.Join(errs...))
}

// tryOverlay mounts dir's overlay in the namespaces of in, writes through
// it, and checks the write reached the upper layer.
func tryOverlay(in linux.Init, dir string) error {
	holder, pipe, err := in.Hold(unix.CLONE_NEWNS)
	if err != nil {
		return err
	}
	err = inMountNS(holder.Pid, func() error {
		merged := filepath.Join(dir, "merged")
		opts := "lowerdir=" + dir + "/lower,upperdir=" + dir + "/upper,workdir=" + dir + "/work"
		if err := mount("overlay", merged, "overlay", 0, opts); err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(merged, "f")); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(merged, "g"), nil, 0o644)
	})
	pipe.Close()
	holder.Kill()
	holder.Wait()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "upper", "g")); err != nil {
		return fmt.Errorf("an overlay's write did not reach its upper layer: %v", err)
	}
	return os.Remove(filepath.Join(dir, "upper", "g"))
}

// toolDirs are the host's top-level entries a root reproduces: overlaid
// when directories, remade when symbolic links.
var toolDirs = []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "opt", "var", "root", "home", "srv"}

// layout is what of the host's top level every root reproduces.
type layout struct {
	overlays []string               // directories, overlaid
	modes    map[string]fs.FileMode // their modes, which the overlay's top takes from its upper directory
	links    map[string]string      // symbolic links, by name, to their targets
}

func hostLayout() (layout, error) {
	lay := layout{modes: map[string]fs.FileMode{}, links: map[string]string{}}
	for _, d := range toolDirs {
		fi, err := os.Lstat("/" + d)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return lay, err
		case fi.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink("/" + d)
			if err != nil {
				return lay, err
			}
			lay.links[d] = t
		case fi.IsDir():
			lay.overlays = append(lay.overlays, d)
			lay.modes[d] = fi.Mode() & (fs.ModePerm | fs.ModeSticky | fs.ModeSetgid)
		}
	}
	return lay, nil
}

// makeSkeleton gives a root what every root has: the overlays' upper
// directories, the host's top-level links, mount points, its own /tmp.
func makeSkeleton(root string) error {
	lay := rootFSProbe.lay
	for _, d := range lay.overlays {
		p := filepath.Join(root, d)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
		if err := os.Chmod(p, lay.modes[d]); err != nil {
			return err
		}
	}
	for name, target := range lay.links {
		p := filepath.Join(root, name)
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			if err := os.Symlink(target, p); err != nil {
				return err
			}
		}
	}
	for _, d := range []string{"dev", "proc", "sys", "run", "tmp"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	return os.Chmod(filepath.Join(root, "tmp"), 0o777|fs.ModeSticky)
}

// copyRoot makes dst a copy of the root src, as cp -a copies: overlay
// whiteouts (character devices) and opaque directories (xattrs) included,
// which an image's deletions are.
func copyRoot(src, dst string) error {
	out, err := exec.Command(rootFSProbe.cp, "-a", "--", src+"/.", dst).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
