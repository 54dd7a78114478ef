package forge

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/scoring"
)

// interpreters maps a script's extension to the program that runs it
// (docs/protocol.md).
var interpreters = map[string]string{".py": "python3", ".sh": "bash", ".js": "node"}

// resolveFiles finds every script and file the manifest names, relative to
// its directory, and computes the manifest's hash; it returns the problems.
func (m *Manifest) resolveFiles(name string, data []byte) []error {
	v := validator{file: name, doc: m.doc}
	h := sha256.New()
	h.Write(data)
	m.Files = map[string]string{}
	m.read = map[string][]byte{}
	defer func() { m.read = nil }() // a run need not hold what it hashed
	m.noteFile(filepath.Base(m.Path), data)
	common := m.addFiles(h, m.Defaults.Files, v.at, "defaults", "files")
	for i := range m.Candidates {
		c := &m.Candidates[i]
		if c.Agent != "" {
			m.resolveAgent(c)
		} else if c.Script != "" {
			if ref, ok := m.addFile(h, c.Script, v.at, "candidates", i, "script"); ok {
				c.files = append(c.files, ref)
				if interp, known := interpreters[strings.ToLower(filepath.Ext(ref.Dst))]; known {
					c.argv = []string{interp, ref.Dst}
				} else if st, _ := os.Stat(ref.Src); st.Mode()&0o111 == 0 {
					v.at(fmt.Sprintf("%s is not .py, .sh or .js and not executable (chmod +x it, or use command:)", c.Script),
						"candidates", i, "script")
				} else {
					c.argv = []string{"./" + ref.Dst}
				}
			}
		} else {
			c.argv = append([]string(nil), c.Command...)
			// Arguments that name files beside the manifest travel with the
			// job, so command: ["python3", "candidates/beta.py"] works in
			// any sandbox.
			for j, arg := range c.Command {
				if arg == "" || filepath.IsAbs(arg) || strings.HasPrefix(arg, "-") {
					continue
				}
				if j == 0 && !strings.Contains(arg, "/") {
					continue // a program on PATH
				}
				if st, err := os.Stat(filepath.Join(m.Dir, arg)); err == nil && st.Mode().IsRegular() {
					if ref, ok := m.addFile(h, arg, v.at, "candidates", i, "command", j); ok {
						c.files = append(c.files, ref)
						if j == 0 && !strings.HasPrefix(arg, "./") && !strings.HasPrefix(arg, "../") {
							c.argv[0] = "./" + ref.Dst
						}
					}
				}
			}
		}
		c.files = append(c.files, common...)
		c.files = append(c.files, m.addFiles(h, c.Files, v.at, "candidates", i, "files")...)
	}
	m.resolveTasks(name, h, &v)
	m.resolveEnvironments(h, &v)
	m.checkJudges(&v)
	if len(v.errs) > 0 {
		return v.errs
	}
	m.Hash = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return nil
}

// resolveTasks reads the tasks_file, if any, after the inline tasks and
// finds every task's files.
func (m *Manifest) resolveTasks(name string, h io.Writer, v *validator) {
	if m.TasksFile != "" {
		shown := m.TasksFile
		if !filepath.IsAbs(shown) {
			shown = filepath.Join(filepath.Dir(name), shown)
		}
		data, err := readCapped(m.abs(m.TasksFile), maxTasksFileBytes)
		if err != nil {
			v.at(fmt.Sprintf("%s: %s", m.TasksFile, unwrapPathErr(err)), "tasks_file")
			return
		}
		m.hashFile(h, "tasks_file", m.TasksFile, data)
		tasks, errs := readTasksFile(shown, data)
		if len(tasks) == 0 && len(errs) == 0 {
			v.at(m.TasksFile+" has no tasks", "tasks_file")
		}
		for i := range tasks {
			errs = append(errs, tasks[i].decode(m)...)
		}
		v.errs = append(v.errs, errs...)
		v.errs = append(v.errs, checkTaskIDs(append(slices.Clip(m.Tasks), tasks...))...)
		m.Tasks = append(m.Tasks, tasks...)
	}
	if m.Harbor != "" {
		m.readHarbor(h, v)
	}
	m.addTests(h, m.Defaults.Verify, v.below("defaults", "verify"))
	for i := range m.Tasks {
		t := &m.Tasks[i]
		tv := t.where.validator()
		for _, f := range t.Files {
			if ref, ok := m.addFile(h, f, tv.at, "files"); ok {
				t.files = append(t.files, ref)
			}
		}
		m.checkTaskTakes(t, tv.at)
		bad := tv.below("verify")
		m.checkVerify(t.Verify, m.Defaults.Verify, bad)
		m.addTests(h, t.Verify, bad)
		if v := t.Verify.over(m.Defaults.Verify); v != nil && !v.atRoot {
			if msg := v.missingFile(); msg != "" {
				bad(msg, "command")
			}
		}
		v.errs = append(v.errs, tv.errs...)
	}
}

// checkJudges refuses a judge whose program does not exist, which would
// fail every trial's verdict: a command judges run on this machine, from
// the manifest's directory.
func (m *Manifest) checkJudges(v *validator) {
	for i, s := range m.Scoring.Scorers {
		if s.Type != scoring.TypeJudge || len(s.Command) == 0 || s.Command[0] == "" {
			continue
		}
		prog := s.Command[0]
		if strings.Contains(prog, "/") {
			if _, err := os.Stat(m.abs(prog)); err != nil {
				v.at(fmt.Sprintf("%s: %s (resolved to %s)", prog, unwrapPathErr(err), m.abs(prog)), "scoring", i, "command", 0)
			}
			continue
		}
		if _, err := exec.LookPath(prog); err != nil {
			v.at(fmt.Sprintf("%q is not a program on PATH here (judges run on this machine)", prog), "scoring", i, "command", 0)
		}
	}
}

// noteFile records one of the manifest's files (by its path relative to the
// manifest's directory where it can) and its digest in m.Files.
func (m *Manifest) noteFile(path string, content []byte) {
	if rel, err := filepath.Rel(m.Dir, path); filepath.IsAbs(path) && err == nil && filepath.IsLocal(rel) {
		path = rel
	}
	sum := sha256.Sum256(content)
	m.Files[filepath.ToSlash(path)] = hex.EncodeToString(sum[:8])
}

// readCapped reads the file at path, refusing one over max bytes (and
// returning what it read: more than max).
func readCapped(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(data)) > max {
		err = fmt.Errorf("larger than %d MiB", max>>20)
	}
	return data, err
}

// addFiles is addFile for each of files, at its index below path: those
// found.
func (m *Manifest) addFiles(h io.Writer, files []string, bad func(msg string, path ...any), path ...any) []runner.File {
	var refs []runner.File
	for j, f := range files {
		if ref, ok := m.addFile(h, f, bad, append(slices.Clip(path), j)...); ok {
			refs = append(refs, ref)
		}
	}
	return refs
}

// addFile finds rel (relative to the manifest's directory, or absolute),
// adds its path and content to the hash h and returns where it goes in a
// job's working directory; bad reports why it cannot, at path.
func (m *Manifest) addFile(h io.Writer, rel string, bad func(msg string, path ...any), path ...any) (runner.File, bool) {
	src := m.abs(rel)
	st, err := os.Stat(src)
	switch {
	case err != nil:
		bad(fmt.Sprintf("%s: %s (resolved to %s)", rel, unwrapPathErr(err), src), path...)
		return runner.File{}, false
	case !st.Mode().IsRegular():
		bad(fmt.Sprintf("%s is not a regular file", rel), path...)
		return runner.File{}, false
	}
	// Its path relative to the manifest's directory is where it goes in
	// the job's working directory: the rule for that is runner.RelPath.
	dst, err := filepath.Rel(m.Dir, src)
	if err == nil {
		dst, err = runner.RelPath(filepath.ToSlash(dst))
		if err != nil && !errors.Is(err, runner.ErrOutside) {
			bad(fmt.Sprintf("%s cannot be copied by its path relative to the manifest's directory: %v", rel, err), path...)
			return runner.File{}, false
		}
	}
	if err != nil {
		bad(fmt.Sprintf("%s is outside the manifest's directory %s; forge copies files by their path relative to it", rel, m.Dir), path...)
		return runner.File{}, false
	}
	content, ok := m.read[src]
	if !ok {
		if content, err = os.ReadFile(src); err != nil {
			bad(fmt.Sprintf("%s: %s", rel, unwrapPathErr(err)), path...)
			return runner.File{}, false
		}
		m.read[src] = content
	}
	m.hashFile(h, dst, dst, content)
	return runner.File{Src: src, Dst: dst}, true
}

// hashFile adds content, a file's, to the manifest's hash h under key, and
// notes it by path (noteFile).
func (m *Manifest) hashFile(h io.Writer, key, path string, content []byte) {
	fmt.Fprintf(h, "\x00%s\x00%d\x00", key, len(content))
	h.Write(content)
	m.noteFile(path, content)
}

// dirFiles are the files under root, in walk order, each by its path
// relative to root; with regular, one that is not a regular file is an
// error.
func dirFiles(root string, regular bool) ([]runner.File, error) {
	var refs []runner.File
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
			return nil
		case regular && !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file", p)
		}
		rel, err := filepath.Rel(root, p)
		refs = append(refs, runner.File{Src: p, Dst: filepath.ToSlash(rel)})
		return err
	})
	return refs, err
}

// unwrapPathErr is what went wrong with a path, without the path (the
// messages name the file their own way).
func unwrapPathErr(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// abs is p relative to the manifest's directory, or p when absolute.
func (m *Manifest) abs(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(m.Dir, p)
}
