package daytonatest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// buildSnapshot takes a new snapshot from pending to active, or to
// build_failed: pending, then building (pulling for an image name) for
// Options.SnapshotBuildDelay and until Options.SnapshotBuildHold is
// closed, then the Dockerfile's steps, really run.
func (s *Server) buildSnapshot(sn *snapshot) {
	defer s.workers.Done()
	s.mu.Lock()
	if sn.state == snapPending {
		sn.state, sn.updatedAt = snapBuilding, time.Now()
		if !sn.built {
			sn.state = snapPulling
		}
		sn.notify()
	}
	s.mu.Unlock()
	if d := s.opts.SnapshotBuildDelay; d > 0 {
		select {
		case <-time.After(d):
		case <-s.closing:
			return
		}
	}
	if hold := s.opts.SnapshotBuildHold; hold != nil {
		select {
		case <-hold:
		case <-s.closing:
			return
		}
	}
	b := &builder{s: s, sn: sn, env: map[string]string{}}
	err := makeSnapshotRoot(sn.root)
	if err == nil && sn.built {
		if RootFS() {
			// On this machine's network, as a build reaches the
			// internet.
			b.fs, err = startRoot(sn.root, filepath.Join(s.opts.Dir, "overlay-work", "snapshot-"+sn.id), "", nil, false, &s.workers)
		}
		if err == nil {
			err = b.run(sn.dockerfile)
		}
		if b.fs != nil {
			// Sandboxes copy the root: its mounts must be gone.
			b.fs.stop()
			<-b.fs.done
		}
	}
	if b.context != "" {
		os.RemoveAll(b.context)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sn.state == snapRemoving {
		sn.notify()
		return
	}
	sn.env, sn.workdir, sn.account, sn.updatedAt = b.env, b.workdir, b.account, time.Now()
	if b.workdir != "" && !RootFS() {
		sn.workdir = b.mapped(b.workdir)
	}
	var ne *notEmulated
	switch {
	case errors.As(err, &ne):
		sn.state, sn.errorReason = snapBuildFailed, err.Error()
		sn.log = append(sn.log, err.Error()+"\n"...)
	case err != nil:
		// The runner's build failed: the API marks the snapshot error
		// with the build's error as its reason (v0.170.0
		// job-state-handler.service.ts handleBuildSnapshotJobCompletion;
		// snapshot.manager.ts syncSnapshotState for runners of API v0).
		sn.state, sn.errorReason = snapError, err.Error()
		sn.log = append(sn.log, "ERROR: "+err.Error()+"\n"...)
	default:
		sn.state, sn.lastUsedAt = snapActive, time.Now()
	}
	sn.notify()
}

// notEmulated is a Dockerfile Docker would build but the emulator does
// not: the snapshot ends build_failed with it as its reason.
type notEmulated struct{ msg string }

func (e *notEmulated) Error() string { return e.msg }

// unsupported is the error of an instruction the emulator cannot build,
// step i of n.
func unsupported(op string, i, n int) error {
	known := "FROM, ENV, WORKDIR, RUN, COPY and ADD"
	if RootFS() {
		known = "FROM, ENV, WORKDIR, RUN, COPY, ADD, USER and ENTRYPOINT"
	}
	return &notEmulated{fmt.Sprintf("Dockerfile instruction %s (step %d/%d) is not supported by the Daytona emulator (%s are)", op, i+1, n, known)}
}

// builder runs a Dockerfile's steps in a snapshot's root.
type builder struct {
	s  *Server
	sn *snapshot
	// fs is the root the steps run in (RootFS); nil when the image's paths
	// are mapped under the snapshot's root on the host.
	fs      *fsRoot
	env     map[string]string // the image's ENV, mapped when fs is nil
	workdir string            // the image's WORKDIR as the image sees it ("" = /)
	// declared are the image paths WORKDIR and ENV named: a RUN step that
	// names one literally would reach the host's path, not the image's.
	declared []string
	// context is the build context, the snapshot's context archives
	// extracted, once a COPY or ADD needs it.
	context string
	// account is who the steps after a USER run as (nil: root), and who
	// the image's sandboxes run as.
	account *account
}

// mapped is the host path of an absolute image path.
func (b *builder) mapped(p string) string {
	return filepath.Join(b.sn.root, filepath.FromSlash(path.Clean("/"+p)))
}

// logf appends a line to the build log.
func (b *builder) logf(format string, args ...any) {
	b.Write(fmt.Appendf(nil, format+"\n", args...))
}

// Write appends to the build log (capped at Options.MaxLog) and wakes its
// followers.
func (b *builder) Write(p []byte) (int, error) {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	if room := b.s.opts.MaxLog - len(b.sn.log); room > 0 {
		b.sn.log = append(b.sn.log, p[:min(len(p), room)]...)
		b.sn.notify()
	}
	return len(p), nil
}

// run runs the Dockerfile's steps: FROM (the root starts empty; the
// emulator has no images), ENV, WORKDIR, RUN, and COPY and ADD from the
// build context the SDK pushed to the object storage. Any other instruction
// fails the build, as does a RUN that exits non-zero; the error is the
// snapshot's errorReason.
func (b *builder) run(df string) error {
	steps := instructions(df)
	for i, step := range steps {
		op, arg, _ := strings.Cut(step, " ")
		op, arg = strings.ToUpper(op), strings.TrimSpace(arg)
		b.logf("Step %d/%d : %s", i+1, len(steps), step)
		if i == 0 && op != "FROM" {
			return errors.New("failed to parse Dockerfile: no build stage in current context (the first instruction must be FROM)")
		}
		// Only a root can run USER and ENTRYPOINT as the image means them.
		if b.fs == nil && (op == "USER" || op == "ENTRYPOINT") {
			return unsupported(op, i, len(steps))
		}
		var err error
		switch op {
		case "FROM":
			if i > 0 {
				err = &notEmulated{"multi-stage builds are not supported by the Daytona emulator"}
			}
		case "ENV":
			err = b.setEnv(arg)
		case "WORKDIR":
			w := b.expand(arg)
			if !strings.HasPrefix(w, "/") {
				w = path.Join("/"+b.workdir, w)
			}
			b.workdir = path.Clean(w)
			if b.fs == nil {
				b.declare(b.workdir)
			}
			err = b.mkdirAll(b.workdir)
		case "RUN":
			err = b.runStep(arg)
		case "COPY", "ADD":
			err = b.copyStep(op, arg)
		case "USER":
			// Resolved now, in the image's own passwd: Docker resolves it
			// when a step (or the container) runs, and fails the same way.
			b.account, err = lookupAccount(b.expand(arg), rootFile(b.sn.root, "passwd"), rootFile(b.sn.root, "group"))
		case "ENTRYPOINT":
			// The API read it from the Dockerfile when the snapshot was
			// created; a sandbox starts it.
		default:
			err = unsupported(op, i, len(steps))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// buildEnv is the environment of a RUN step: a minimal base (the host's
// PATH, HOME and TMPDIR inside the root) under the image's ENV.
func (b *builder) buildEnv() map[string]string {
	// Docker's: a root's own /tmp needs no TMPDIR.
	env := map[string]string{"PATH": hostPath(), "HOME": "/root", "LANG": "C.UTF-8"}
	switch {
	case b.fs == nil:
		env["HOME"], env["TMPDIR"] = filepath.Join(b.sn.root, "root"), filepath.Join(b.sn.root, "tmp")
	case b.account != nil:
		env["HOME"] = b.account.home
	}
	maps.Copy(env, b.env)
	return env
}

// expand is Docker's $VAR and ${VAR} substitution with the build's
// environment; unset variables are empty. A dollar that was escaped or
// single-quoted (literalDollar, from shellWords) stays a dollar.
func (b *builder) expand(s string) string {
	env := b.buildEnv()
	return strings.ReplaceAll(os.Expand(s, func(k string) string { return env[k] }), literalDollar, "$")
}

// literalDollar stands, in a word shellWords returns, for a $ that Docker
// takes literally (\$, or inside single quotes): expand must not expand it.
const literalDollar = "\x00"

// mapValue maps the absolute path elements the Dockerfile wrote in a
// ":"-separated value under the root, before expansion: what a variable
// brings in is left as it is (the image's own variables are mapped
// already; the host's are the host's).
func (b *builder) mapValue(v string) string {
	if b.fs != nil {
		return b.expand(v) // the image's paths are the root's
	}
	parts := strings.Split(v, ":")
	for i, p := range parts {
		if strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "//") {
			b.declare(path.Clean(p))
			parts[i] = b.mapped(p)
		}
	}
	return b.expand(strings.Join(parts, ":"))
}

// declare notes an image path WORKDIR or ENV named.
func (b *builder) declare(p string) {
	if p != "/" && !slices.Contains(b.declared, p) {
		b.declared = append(b.declared, p)
	}
}

// setEnv applies ENV: "K=V [K2=V2 ...]" (values may be quoted) or the
// legacy "K V".
func (b *builder) setEnv(arg string) error {
	words, err := shellWords(arg)
	if err != nil {
		return fmt.Errorf("ENV %s: %w", arg, err)
	}
	if len(words) == 0 {
		return errors.New("ENV requires at least one argument")
	}
	if !strings.Contains(words[0], "=") {
		k, v, _ := strings.Cut(arg, " ")
		b.env[k] = b.mapValue(strings.TrimSpace(v))
		return nil
	}
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			return fmt.Errorf("ENV %s: %q is not KEY=VALUE", arg, w)
		}
		b.env[k] = b.mapValue(v)
	}
	return nil
}

// runStep runs a RUN step as a real process: the shell form through
// "/bin/sh -c", the exec form (a JSON array) as is, in the mapped WORKDIR
// with the image's environment, its output into the build log. It fails
// with Docker's message when the step exits non-zero.
func (b *builder) runStep(arg string) error {
	for _, p := range b.declared {
		if namesPath(arg, p) {
			return &notEmulated{fmt.Sprintf("RUN %s: names the image path %s literally; the Daytona emulator maps image paths only in WORKDIR and ENV (use a path relative to the WORKDIR or an ENV variable)", arg, p)}
		}
	}
	// In a root, the shell runs the exec form too: it finds the program
	// on the image's PATH, in the root.
	sh, argv := arg, []string{"/bin/sh", "-c", arg}
	if strings.HasPrefix(arg, "[") {
		var exe []string
		if err := json.Unmarshal([]byte(arg), &exe); err == nil && len(exe) > 0 {
			sh, argv = execLine(exe), exe
		}
	}
	cwd := b.mapped(b.workdir)
	if b.fs != nil {
		cwd = path.Join("/", b.workdir)
	}
	cmd, start := newCommand(b.fs, b.account, sh, argv, cwd, b.buildEnv())
	cmd.Stdout, cmd.Stderr = b, b
	if err := start(); err != nil {
		return fmt.Errorf("process %q could not start: %w", strings.Join(argv, " "), err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-b.s.closing:
		killGroup(cmd)
		<-done
		return errors.New("the emulator closed during the build")
	}
	killGroup(cmd)
	if err != nil {
		// BuildKit's message (the runner builds with BuildKit); -1 when
		// the process did not exit.
		return fmt.Errorf("process %q did not complete successfully: exit code: %d", strings.Join(argv, " "), cmd.ProcessState.ExitCode())
	}
	return nil
}

// copyTree makes dst a copy of the tree src: directories with their modes,
// files copied (never linked: a sandbox writing over a file in place must
// not change its snapshot's, nor another sandbox's), symbolic links remade,
// with any target under src moved under dst.
func copyTree(src, dst string) error {
	return walkCopy(src, func(rel string, perm os.FileMode) error {
		return os.MkdirAll(filepath.Join(dst, rel), perm|0o700)
	}, func(rel, target string) error {
		if target == src || strings.HasPrefix(target, src+string(filepath.Separator)) {
			target = dst + strings.TrimPrefix(target, src)
		}
		return os.Symlink(target, filepath.Join(dst, rel))
	}, func(rel string, in io.Reader, perm os.FileMode) error {
		return writeFile(filepath.Join(dst, rel), in, perm)
	})
}

// copyIn makes dst, a path in the root r, a copy of src on this machine:
// directories made, files copied with their modes, symbolic links made as
// they are (they name the image's paths).
func copyIn(r *fsRoot, src, dst string) error {
	return walkCopy(src, func(rel string, perm os.FileMode) error {
		return r.mkdirAll(path.Join(dst, filepath.ToSlash(rel)), perm|0o700)
	}, func(rel, target string) error {
		return r.symlink(target, path.Join(dst, filepath.ToSlash(rel)))
	}, func(rel string, in io.Reader, perm os.FileMode) error {
		out, err := r.create(path.Join(dst, filepath.ToSlash(rel)), perm)
		if err != nil {
			return err
		}
		_, err = io.Copy(out, in)
		if err == nil {
			err = out.Chmod(perm) // a file that was there keeps its mode otherwise
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		return err
	})
}

// walkCopy is the walk copyTree and copyIn make of src: dir, link and file
// for each directory, symbolic link (with its target) and regular file
// (open), by their path relative to src; sockets and fifos are not part of
// an image.
func walkCopy(src string, dir func(rel string, perm os.FileMode) error, link func(rel, target string) error, file func(rel string, in io.Reader, perm os.FileMode) error) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return dir(rel, info.Mode().Perm())
		case d.Type()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return link(rel, target)
		case d.Type().IsRegular():
			in, err := os.Open(p)
			if err != nil {
				return err
			}
			defer in.Close()
			return file(rel, in, info.Mode().Perm())
		}
		return nil
	})
}

// writeFile writes what r holds to the file name, made with mode if new.
func writeFile(name string, r io.Reader, mode os.FileMode) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	return errors.Join(err, f.Close())
}

// copyStep runs COPY or ADD: each source, a path in the build context (as
// the SDK names it: the local path it was given), copied into the image
// path the last word names, relative to the WORKDIR; a directory's
// contents into it. URLs, archives to unpack, globs and --from are not
// emulated.
func (b *builder) copyStep(op, arg string) error {
	words, err := shellWords(arg)
	if strings.HasPrefix(arg, "[") {
		err = json.Unmarshal([]byte(arg), &words)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, arg, err)
	}
	var args []string
	for _, w := range words {
		switch {
		case strings.HasPrefix(w, "--from"):
			return &notEmulated{fmt.Sprintf("%s %s: --from is not supported by the Daytona emulator", op, arg)}
		case !strings.HasPrefix(w, "--"): // --chown, --chmod: the emulator has one user
			args = append(args, w)
		}
	}
	if len(args) < 2 {
		return fmt.Errorf("%s requires at least two arguments, but only one was provided. Destination could not be determined", op)
	}
	srcs, dest := args[:len(args)-1], b.expand(args[len(args)-1])
	if !strings.HasPrefix(dest, "/") {
		dest = path.Join("/"+b.workdir, dest)
	}
	if err := b.extractContext(); err != nil {
		return err
	}
	intoDir := strings.HasSuffix(args[len(args)-1], "/") || len(srcs) > 1
	for _, src := range srcs {
		if strings.ContainsAny(src, "*?[") || strings.Contains(src, "://") ||
			op == "ADD" && (strings.HasSuffix(src, ".tar") || strings.Contains(src, ".tar.") || strings.HasSuffix(src, ".tgz")) {
			return &notEmulated{fmt.Sprintf("%s %s: globs, URLs and archives to unpack are not supported by the Daytona emulator", op, src)}
		}
		from := filepath.Join(b.context, filepath.FromSlash(path.Clean("/"+src)))
		fi, err := os.Stat(from)
		if err != nil {
			return fmt.Errorf("failed to compute cache key: failed to calculate checksum of ref: \"/%s\": not found", strings.TrimPrefix(path.Clean("/"+src), "/"))
		}
		to := path.Clean(dest)
		if !fi.IsDir() && intoDir {
			to = path.Join(to, filepath.Base(from))
		}
		b.logf(" ---> copied %s to %s", src, dest)
		if err := b.mkdirAll(path.Dir(to)); err != nil {
			return err
		}
		if err := b.replace(from, to); err != nil {
			return fmt.Errorf("%s %s: %w", op, src, err)
		}
	}
	return nil
}

// mkdirAll makes the image directory p and its missing parents.
func (b *builder) mkdirAll(p string) error {
	if b.fs != nil {
		return b.fs.mkdirAll(p, 0o755)
	}
	return os.MkdirAll(b.mapped(p), 0o755)
}

// replace makes the image path to a copy of from, on this machine: a file
// the image had there is replaced, as Docker does.
func (b *builder) replace(from, to string) error {
	if b.fs != nil {
		b.fs.remove(to)
		return copyIn(b.fs, from, to)
	}
	os.Remove(b.mapped(to))
	return copyTree(from, b.mapped(to))
}

// extractContext extracts the snapshot's context archives, once.
func (b *builder) extractContext() error {
	if b.context != "" {
		return nil
	}
	dir, err := os.MkdirTemp(b.s.opts.Dir, "context-")
	if err != nil {
		return err
	}
	b.context = dir
	for _, hash := range b.sn.contextHashes {
		if err := b.s.extractContext(hash, dir); err != nil {
			return err
		}
	}
	return nil
}
