package forge

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/forge-run/forge/internal/yamlcheck"
)

// scriptExts are the extensions of what a command: names as a script of
// the user's own.
var scriptExts = []string{".py", ".sh", ".js", ".mjs", ".ts", ".rb", ".pl"}

// commandFileNotes notes a command: argument that names a script of the
// user's (candidates/beta.py) that is not beside the manifest: such
// arguments travel with the job, and a missing one fails at run time with
// a path cut short. A candidate with setup: or an environment may make
// the file itself, and files: may bring it: no note then.
func (m *Manifest) commandFileNotes() {
	for i, c := range m.Candidates {
		if len(c.Command) < 2 || len(c.Setup)+len(m.Defaults.Setup) > 0 || c.Environment != nil || m.Defaults.Environment != nil {
			continue
		}
		files := slices.Concat(m.Defaults.Files, c.Files)
		for _, arg := range c.Command[1:] {
			if !slices.Contains(scriptExts, path.Ext(arg)) || path.IsAbs(arg) || strings.HasPrefix(arg, "-") || inFiles(arg, files) {
				continue
			}
			if _, err := os.Stat(filepath.Join(m.Dir, filepath.FromSlash(arg))); err != nil {
				m.Notes = append(m.Notes, fmt.Sprintf("candidates[%d].command: %s: no such file beside the manifest%s; the job will not find it",
					i, arg, nearFile(m.Dir, arg)))
			}
		}
	}
}

// inFiles reports whether files: puts arg in the job's directory.
func inFiles(arg string, files []string) bool {
	for _, f := range files {
		f = strings.TrimSuffix(path.Clean(filepath.ToSlash(f)), "/")
		if arg == f || strings.HasPrefix(arg, f+"/") || path.Base(f) == path.Base(arg) {
			return true
		}
	}
	return false
}

// nearFile is " (did you mean candidates/beta.py?)" for a misspelt file in
// its directory, else "".
func nearFile(dir, arg string) string {
	entries, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(path.Dir(arg))))
	if err != nil {
		return ""
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if near := yamlcheck.Nearest(path.Base(arg), names); near != "" {
		return fmt.Sprintf(" (did you mean %s?)", path.Join(path.Dir(arg), near))
	}
	return ""
}
