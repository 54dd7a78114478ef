package runner

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
)

// ErrOutside is wrapped by RelPath's error for a path outside the directory.
var ErrOutside = errors.New("does not name a file inside the working directory")

// RelPath is the one rule for a path a job names in its working directory:
// slash separated, strictly inside once cleaned (filepath.IsLocal), with no
// NUL, newline, carriage return (reports are line based) or backslash (a name
// on one system, a separator on another). Its error wraps ErrOutside when p
// is absolute or leaves the directory.
func RelPath(p string) (string, error) {
	switch {
	case p == "":
		return "", errors.New("is empty; want a path inside the working directory")
	case strings.ContainsAny(p, "\x00\n\r"):
		return "", fmt.Errorf("%q holds a control character (NUL, newline or carriage return)", p)
	case strings.ContainsRune(p, '\\'):
		return "", fmt.Errorf("%q holds a backslash; separate directories with /", p)
	case strings.HasPrefix(p, "/"):
		return "", fmt.Errorf("%q is absolute: it %w", p, ErrOutside)
	}
	c := path.Clean(p)
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%q %w", p, ErrOutside)
	}
	return c, nil
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// ValidID reports whether s may name a candidate, a run or a volume: safe as
// one path element and in a sandbox's name.
func ValidID(s string) bool { return idPattern.MatchString(s) && s != "." && s != ".." }
