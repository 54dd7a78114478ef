package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/agent/agenttest"
	"github.com/forge-run/forge/runner/daytona/daytonatest"
)

// readmeCommands are the commands README.md shows: every line of its code
// blocks that starts with "$ ", and the set-up block's first lines.
func readmeCommands(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	in, first := false, true
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			if in {
				first = false
			}
			in = !in
			continue
		}
		switch {
		case !in:
		case strings.HasPrefix(line, "$ "):
			cmds = append(cmds, strings.TrimPrefix(line, "$ "))
		case first && strings.TrimSpace(line) != "":
			cmds = append(cmds, line) // the set-up commands, first thing in the README
		}
	}
	return cmds
}

// TestReadmeCommands runs every command the README shows, as a newcomer
// would, from a copy of the samples: a README whose commands rot fails
// here. "go run ." is the forge under test; the emulator's command is
// the emulator started here; go test is what runs this test.
func TestReadmeCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, p := range []string{"forge.yaml", "candidates", "examples"} {
		if err := os.CopyFS(filepath.Join(dir, p), os.DirFS(filepath.Join("..", p))); err != nil {
			if err := copyFile(filepath.Join("..", p), filepath.Join(dir, p)); err != nil {
				t.Fatal(err)
			}
		}
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + os.TempDir()}
	comment := regexp.MustCompile(`\s+#.*$`)
	cmds := readmeCommands(t)
	if len(cmds) < 8 {
		t.Fatalf("found %d commands in README.md: %q", len(cmds), cmds)
	}
	ran := 0
	for _, line := range cmds {
		c := strings.TrimSpace(comment.ReplaceAllString(line, ""))
		switch {
		case strings.HasPrefix(c, "go test"):
			continue // what runs this test
		case strings.Contains(c, "daytonatest/emulator"):
			if !daytonatest.RootFS() {
				t.Fatal("the README's Daytona commands play Harbor tasks, which need the emulator's root file system (root and overlayfs)")
			}
			srv := daytonatest.Start(t, daytonatest.Options{})
			env = append(env, "DAYTONA_API_KEY="+srv.APIKey(), "DAYTONA_API_URL="+srv.URL())
			continue
		case strings.Contains(c, "agent/agenttest/fakemodel") && strings.HasSuffix(c, "&"):
			script, err := agenttest.LoadScript(filepath.Join("..", "examples", "agents", "script.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			model := agenttest.Start(t, agenttest.Options{Key: "any", Script: script})
			env = append(env, "AGENT_MODEL_URL="+model.URL, "XDG_CACHE_HOME="+agentCache(t))
			continue
		case strings.Contains(c, "fake_model.py") && strings.HasSuffix(c, "&"):
			url := startFakeModel(t, "") // any key, as the README's "any"
			env = append(env, "FAKE_MODEL_URL="+url)
			continue
		}
		c = strings.ReplaceAll(c, "go run . ", "forge ")
		c = strings.ReplaceAll(c, "http://127.0.0.1:8765/v1", "$FAKE_MODEL_URL")
		c = strings.ReplaceAll(c, "http://127.0.0.1:8766", "$AGENT_MODEL_URL")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "sh", "-c", c+" --out "+filepath.Join(dir, "artifacts"))
		if !strings.HasPrefix(c, "forge ") && !strings.Contains(c, " forge ") {
			cmd = exec.CommandContext(ctx, "sh", "-c", c)
		}
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("README command %q: %v\n%s", line, err, out)
		}
		ran++
	}
	if ran < 6 {
		t.Errorf("ran %d of the README's commands", ran)
	}
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// mdLink is a Markdown link's target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocsLinks: every relative link of the README and docs/ points to a
// file that exists, and to a heading of it when it names one.
func TestDocsLinks(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	files = append(files, filepath.Join("..", "README.md"), filepath.Join("..", "examples", "harbor", "README.md"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			full := f
			if path != "" {
				full = filepath.Join(filepath.Dir(f), path)
			}
			if _, err := os.Stat(full); err != nil {
				t.Errorf("%s: link %s: %v", f, target, err)
				continue
			}
			if anchor != "" && strings.HasSuffix(full, ".md") && !hasHeading(t, full, anchor) {
				t.Errorf("%s: link %s: no heading #%s in %s", f, target, anchor, full)
			}
		}
	}
}

// hasHeading reports whether the Markdown file has a heading whose
// GitHub anchor is anchor.
func hasHeading(t *testing.T, file, anchor string) bool {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	drop := regexp.MustCompile(`[^\p{L}\p{N} _-]`)
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		slug := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
		if slug == anchor {
			return true
		}
	}
	return false
}
