package runner

// The verifier's tools: the programs it stands on, fingerprinted as the
// candidate starts and again before the verifier runs; a trial whose tools
// changed between is marked tampered (docs/protocol.md, "What the verifier
// can trust").

import (
	"bytes"
	"io"
	"os"
	"path"
	"slices"
	"strings"
)

// Tools are the programs the verifier stands on, each a name looked up on
// PATH or an absolute path: the shells (/bin/sh, which runs its command,
// and bash), python3, the interpreter its command starts and the one named
// by the #! line of each of its files the command names.
func (v *Verify) Tools() []string {
	tools := []string{"/bin/sh", "bash", "python3"}
	add := func(t string) {
		if t != "" && !slices.Contains(tools, t) {
			tools = append(tools, t)
		}
	}
	first := true
	for _, w := range strings.Fields(v.Command) {
		w = strings.Trim(w, `"'`)
		f := v.file(w)
		switch {
		case f != nil:
			add(shebang(*f))
		case first && !strings.ContainsAny(w, "$=`;&|<>(){}") && w != "exec" && w != "env":
			add(w)
		default:
			continue
		}
		first = false
	}
	return tools
}

// ToolPath is the PATH the verifier's tools are looked up on: its env's,
// else the sandbox's (base).
func (v *Verify) ToolPath(base string) string {
	if p, ok := v.Env["PATH"]; ok {
		return p
	}
	return base
}

// file is the verifier's file the command's word w names, or nil.
func (v *Verify) file(w string) *File {
	for i, f := range v.Files {
		if f.Dst != "" && (w == f.Dst || strings.HasSuffix(w, "/"+f.Dst)) {
			return &v.Files[i]
		}
	}
	return nil
}

// shebang is the interpreter f's #! line names: the program after
// /usr/bin/env, else the path; "" without one.
func shebang(f File) string {
	head := f.Data
	if head == nil {
		fh, err := os.Open(f.Src)
		if err != nil {
			return ""
		}
		defer fh.Close()
		head = make([]byte, 256)
		n, _ := io.ReadFull(fh, head)
		head = head[:n]
	}
	line, ok := bytes.CutPrefix(head, []byte("#!"))
	if !ok {
		return ""
	}
	line, _, _ = bytes.Cut(line, []byte("\n"))
	words := strings.Fields(string(line))
	if len(words) == 0 {
		return ""
	}
	if path.Base(words[0]) != "env" {
		return words[0]
	}
	for _, w := range words[1:] {
		if !strings.HasPrefix(w, "-") && !strings.Contains(w, "=") {
			return w
		}
	}
	return ""
}

// Tool is what a tool was in the sandbox: the path it resolved to and
// the backend's fingerprint of the file there.
type Tool struct {
	Path, Print string
}

// ToolPrints are a sandbox's tools by name, as found at one moment; a tool
// not found has none. Nil: not looked at.
type ToolPrints map[string]Tool

// CheckTools marks the trial tampered when a tool found as the candidate
// started (before) is gone, resolves elsewhere or changed by the time the
// verifier runs (after): Tampered lists each such tool's path (the new one
// when it resolves elsewhere). Nothing is marked when either is unknown.
func (r *Result) CheckTools(before, after ToolPrints) {
	if before == nil || after == nil {
		return
	}
	var changed []string
	for name, b := range before {
		a, ok := after[name]
		switch {
		case !ok:
			changed = append(changed, b.Path)
		case a.Path != b.Path:
			changed = append(changed, a.Path)
		case a.Print != b.Print:
			changed = append(changed, b.Path)
		}
	}
	slices.Sort(changed)
	r.Tampered = slices.Compact(changed)
}
