package local

// The verifier's tools, fingerprinted from their file's metadata: one stat
// a place looked at, where hashing the binaries would cost milliseconds a
// job (runner.Verify.Tools).

import (
	"path/filepath"

	"github.com/forge-run/forge/runner"
)

// toolPrints are v's tools as found now on its PATH (pathList, the jobs').
func toolPrints(v *runner.Verify, pathList string) runner.ToolPrints {
	pathList = v.ToolPath(pathList)
	names := v.Tools()
	prints := make(runner.ToolPrints, len(names))
	for _, name := range names {
		if t, ok := findTool(name, pathList); ok {
			prints[name] = t
		}
	}
	return prints
}

// findTool is the executable file name is, itself when absolute, else the
// first on pathList; a name with a slash that is not absolute is none.
func findTool(name, pathList string) (runner.Tool, bool) {
	if filepath.IsAbs(name) {
		print, ok := statTool(name)
		return runner.Tool{Path: name, Print: print}, ok
	}
	if filepath.Base(name) != name {
		return runner.Tool{}, false
	}
	for _, d := range filepath.SplitList(pathList) {
		if !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		if print, ok := statTool(p); ok {
			return runner.Tool{Path: p, Print: print}, true
		}
	}
	return runner.Tool{}, false
}
