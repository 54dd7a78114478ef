package runner

import (
	"errors"
	"testing"
)

func TestRelPath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"output.md", "output.md"},
		{"out/post.md", "out/post.md"},
		{"./out//post.md", "out/post.md"},
		{"a/./b", "a/b"},
		{"out/../x.md", "x.md"},
		{"a/b/../../c", "c"},
		{"out/", "out"},
		{".forge-result.json", ".forge-result.json"},
		{"..x", "..x"},
		{"x..", "x.."},
		{"a b/c:d", "a b/c:d"},
	} {
		if got, err := RelPath(tc.in); err != nil || got != tc.want {
			t.Errorf("RelPath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		in      string
		outside bool // the error wraps ErrOutside
	}{
		{".", true}, {"./", true}, {"a/..", true}, {"..", true}, {"../x", true}, {"./../x", true},
		{"a/../..", true}, {"a/../../x", true}, {"/etc/passwd", true}, {"/", true}, {"//x", true},
		{"", false}, {"a\x00b", false}, {"a\nb", false}, {"a\rb", false}, {`a\b`, false}, {`..\x`, false},
	} {
		got, err := RelPath(tc.in)
		if err == nil {
			t.Errorf("RelPath(%q) = %q; want it refused", tc.in, got)
		} else if errors.Is(err, ErrOutside) != tc.outside {
			t.Errorf("RelPath(%q): %v; wraps ErrOutside %v, want %v", tc.in, err, !tc.outside, tc.outside)
		}
	}
}
