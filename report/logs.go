package report

// What the reports say of a trial's stored files: whether the record holds
// all of one or an excerpt (schema 3), and where the whole file is.

import (
	"net/url"
	"strings"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
)

// logFile is one of a trial's stored files as a report names it.
type logFile struct {
	// Name is "stdout", "stderr" or "artifact".
	Name string
	// Note is "last 1.0 KiB of 20 KiB"; "" when the record holds it whole.
	Note string
	// Path is relative to the run's directory; "" unless safeRunPath.
	Path string
}

// stdoutFile, stderrFile and artifactFile describe r's files; the record
// holds the end of an output and the start of the artifact.
func stdoutFile(r *record.Trial) logFile {
	return storedFile("stdout", r.OutputPath, r.OutputCut, "last", len(r.Output), r.OutputBytes)
}

func stderrFile(r *record.Trial) logFile {
	return storedFile("stderr", r.StderrPath, r.StderrCut, "last", len(r.Stderr), r.StderrBytes)
}

func artifactFile(r *record.Trial) logFile {
	return storedFile("artifact", r.ArtifactPath, r.ArtifactCut, "first", artifactHeld(r), r.ArtifactBytes)
}

// storedFile is a file at path of which the record holds all, or when cut
// the first or last (end) kept bytes of whole: "last 1.0 KiB of 20 KiB".
func storedFile(name, path string, cut bool, end string, kept int, whole int64) logFile {
	f := logFile{Name: name}
	if safeRunPath(path) {
		f.Path = path
	}
	if cut {
		f.Note = end + " " + text.Bytes(float64(kept))
		if whole > 0 {
			f.Note += " of " + text.Bytes(float64(whole))
		}
	}
	return f
}

// Sentence is "stdout: last 1.0 KiB of 20 KiB, whole file alpha/q7/stdout.log".
func (f logFile) Sentence() string {
	var parts []string
	if f.Note != "" {
		parts = append(parts, f.Note)
	}
	if f.Path != "" {
		parts = append(parts, "whole file "+f.Path)
	}
	if len(parts) == 0 {
		return ""
	}
	return f.Name + ": " + strings.Join(parts, ", ")
}

// safeRunPath reports whether p may be named and linked inside the run's
// directory: relative, slash-separated, valid UTF-8, without "..", empty
// elements, backslashes, colons (a scheme, a drive) or control characters.
func safeRunPath(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\\:") {
		return false
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || r == '\uFFFD' {
			return false
		}
	}
	for _, el := range strings.Split(p, "/") {
		if el == "" || el == ".." {
			return false
		}
	}
	return true
}

// logHref is the link to p in runDir as seen from where the report is
// written; "" without runDir or p. Every element is escaped, so it is never a
// URL with a scheme.
func logHref(runDir, p string) string {
	if runDir == "" || !safeRunPath(p) {
		return ""
	}
	var out []string
	dir := strings.ReplaceAll(runDir, "\\", "/")
	abs := strings.HasPrefix(dir, "/")
	for _, el := range strings.Split(dir, "/") {
		if el != "" && el != "." {
			out = append(out, url.PathEscape(el))
		}
	}
	for _, el := range strings.Split(p, "/") {
		out = append(out, url.PathEscape(el))
	}
	h := strings.Join(out, "/")
	if abs {
		return "/" + h
	}
	if strings.Contains(out[0], ":") {
		return "./" + h // never read as a scheme
	}
	return h
}
