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

// stdoutFile and stderrFile describe r's output; the record holds its end.
func stdoutFile(r *record.Trial) logFile {
	return outputFile("stdout", r.OutputPath, r.OutputCut, len(r.Output), r.OutputBytes)
}

func stderrFile(r *record.Trial) logFile {
	return outputFile("stderr", r.StderrPath, r.StderrCut, len(r.Stderr), r.StderrBytes)
}

func outputFile(name, path string, cut bool, kept int, whole int64) logFile {
	f := logFile{Name: name, Path: safe(path)}
	if cut {
		f.Note = "last " + part(kept, whole)
	}
	return f
}

// artifactFile describes r's artifact and how much of its start is held.
func artifactFile(r *record.Trial) logFile {
	f := logFile{Name: "artifact", Path: safe(r.ArtifactPath)}
	if r.ArtifactCut {
		f.Note = "first " + part(artifactHeld(r), r.ArtifactBytes)
	}
	return f
}

// part is "1.0 KiB of 20 KiB".
func part(kept int, total int64) string {
	if total <= 0 {
		return text.Bytes(float64(kept))
	}
	return text.Bytes(float64(kept)) + " of " + text.Bytes(float64(total))
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

func safe(p string) string {
	if safeRunPath(p) {
		return p
	}
	return ""
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
