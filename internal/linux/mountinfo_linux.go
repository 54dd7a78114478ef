package linux

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Mount is one line of /proc/PID/mountinfo, the fields forge reads.
type Mount struct {
	Root, Point, FSType, SuperOpts string
}

// Place is the directory of cgroup cg under this mount, or "" if not shown.
func (m Mount) Place(cg string) string {
	if m.Root == "/" {
		return filepath.Join(m.Point, cg)
	}
	if cg == m.Root || strings.HasPrefix(cg, m.Root+"/") {
		return filepath.Join(m.Point, strings.TrimPrefix(cg, m.Root))
	}
	return ""
}

// ParseMountinfo reads a mountinfo file's lines, skipping malformed ones.
func ParseMountinfo(b []byte) []Mount {
	var out []Mount
	for line := range strings.Lines(string(b)) {
		// id parent major:minor root mountpoint options [optional...] - fstype source super-options
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if sep < 6 || sep+3 >= len(f) {
			continue
		}
		out = append(out, Mount{
			Root:      unescapeMount(f[3]),
			Point:     unescapeMount(f[4]),
			FSType:    f[sep+1],
			SuperOpts: f[sep+3],
		})
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// HasOption reports whether the comma-separated opts hold name.
func HasOption(opts, name string) bool {
	return slices.Contains(strings.Split(opts, ","), name)
}
