package forge

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/forge-run/forge/runner"
)

// fileRef is a file a job takes: its path here and its path in the job's
// working directory.
type fileRef struct{ src, dst string }

// interpreters maps a script's extension to the program that runs it
// (docs/protocol.md).
var interpreters = map[string]string{".py": "python3", ".sh": "bash", ".js": "node"}

// resolveFiles finds every script and file the manifest names, relative to
// its directory, and computes the manifest's hash.
func (m *Manifest) resolveFiles(name string, data []byte) error {
	v := validator{file: name, doc: m.doc}
	h := sha256.New()
	h.Write(data)
	addFile := func(rel string, path ...any) (fileRef, bool) {
		src := rel
		if !filepath.IsAbs(src) {
			src = filepath.Join(m.Dir, rel)
		}
		st, err := os.Stat(src)
		switch {
		case err != nil:
			v.at(fmt.Sprintf("%s: %s (resolved to %s)", rel, unwrapPathErr(err), src), path...)
			return fileRef{}, false
		case !st.Mode().IsRegular():
			v.at(fmt.Sprintf("%s is not a regular file", rel), path...)
			return fileRef{}, false
		}
		// Its path relative to the manifest's directory is where it goes in
		// the job's working directory: the rule for that is runner.RelPath.
		dst, err := filepath.Rel(m.Dir, src)
		if err == nil {
			dst, err = runner.RelPath(filepath.ToSlash(dst))
			if err != nil && !errors.Is(err, runner.ErrOutside) {
				v.at(fmt.Sprintf("%s cannot be copied by its path relative to the manifest's directory: %v", rel, err), path...)
				return fileRef{}, false
			}
		}
		if err != nil {
			v.at(fmt.Sprintf("%s is outside the manifest's directory %s; forge copies files by their path relative to it", rel, m.Dir), path...)
			return fileRef{}, false
		}
		content, err := os.ReadFile(src)
		if err != nil {
			v.at(fmt.Sprintf("%s: %s", rel, unwrapPathErr(err)), path...)
			return fileRef{}, false
		}
		fmt.Fprintf(h, "\x00%s\x00%d\x00", dst, len(content))
		h.Write(content)
		return fileRef{src: src, dst: dst}, true
	}
	var common []fileRef
	for j, f := range m.Defaults.Files {
		if ref, ok := addFile(f, "defaults", "files", j); ok {
			common = append(common, ref)
		}
	}
	for i := range m.Candidates {
		c := &m.Candidates[i]
		c.files = nil
		if c.Script != "" {
			ref, ok := addFile(c.Script, "candidates", i, "script")
			if ok {
				c.files = append(c.files, ref)
				if interp, known := interpreters[strings.ToLower(filepath.Ext(ref.dst))]; known {
					c.argv = []string{interp, ref.dst}
				} else if st, _ := os.Stat(ref.src); st.Mode()&0o111 == 0 {
					v.at(fmt.Sprintf("%s is not .py, .sh or .js and not executable (chmod +x it, or use command:)", c.Script),
						"candidates", i, "script")
				} else {
					c.argv = []string{"./" + ref.dst}
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
					if ref, ok := addFile(arg, "candidates", i, "command", j); ok {
						c.files = append(c.files, ref)
						if j == 0 && !strings.HasPrefix(arg, "./") && !strings.HasPrefix(arg, "../") {
							c.argv[0] = "./" + ref.dst
						}
					}
				}
			}
		}
		c.files = append(c.files, common...)
		for j, f := range c.Files {
			if ref, ok := addFile(f, "candidates", i, "files", j); ok {
				c.files = append(c.files, ref)
			}
		}
	}
	if len(v.errs) > 0 {
		return errors.Join(v.errs...)
	}
	m.Hash = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return nil
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
