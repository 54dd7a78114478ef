//go:build unix

package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forge-run/forge/agent/agenttest"
	"github.com/forge-run/forge/internal/testfiles"
)

func TestBuiltins(t *testing.T) {
	for _, name := range BuiltinNames() {
		spec, ok := Builtin(name)
		if !ok || spec.Name != name {
			t.Fatalf("Builtin(%q) = %+v, %v", name, spec, ok)
		}
		pin, ok := agenttest.Pin(name)
		if !ok || pin.Package != spec.Package || pin.Version != spec.Version || pin.Bin != spec.Bin {
			t.Errorf("%s: the tests pin %+v, the spec says %s@%s (%s)", name, pin, spec.Package, spec.Version, spec.Bin)
		}
		if spec.Run == "" || spec.KeyEnv == "" || spec.Log == FormatNone || len(spec.Install) == 0 {
			t.Errorf("%s: incomplete spec %+v", name, spec)
		}
		if out, err := exec.Command("sh", "-n", "-c", spec.Run).CombinedOutput(); err != nil {
			t.Errorf("%s: its run script is not sh: %v: %s", name, err, out)
		}
		spec.Env["X"] = "changed"
		if again, _ := Builtin(name); again.Env["X"] != "" {
			t.Errorf("%s: a spec's Env is shared between calls", name)
		}
	}
	if _, ok := Builtin("aider"); ok {
		t.Error("Builtin(aider) found an agent")
	}
}

// installLine runs one install line with PATH, as root would in an image.
func installLine(t *testing.T, line, path string) (string, error) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Env = []string{"PATH=" + path, "FORGE_AGENT_VERSION=9.9.9", "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Without npm, apt-get or apk, the first line fails saying what is missing.
func TestInstallWithoutNode(t *testing.T) {
	for _, name := range BuiltinNames() {
		spec, _ := Builtin(name)
		out, err := installLine(t, spec.Install[0], t.TempDir())
		if err == nil || !strings.Contains(out, "forge: "+name+" needs Node.js") {
			t.Errorf("%s: %v: %s; want a failure naming Node.js", name, err, out)
		}
	}
}

// The install lines, with stand-ins for npm and the agent: npm installs the
// version asked for, and the agent is checked to run; a native binary left
// out by npm is put in place by the package's own postinstall.
func TestInstallLines(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not on PATH: the agent tests need Node.js and npm")
	}
	for _, name := range BuiltinNames() {
		spec, _ := Builtin(name)
		dir := t.TempDir()
		bin, root := filepath.Join(dir, "bin"), filepath.Join(dir, "lib")
		testfiles.Write(t, dir, map[string]string{
			"bin/npm": `#!/bin/sh
case "$1" in
root) echo "` + root + `" ;;
*) echo "$@" >> "` + dir + `/npm.log" ;;
esac
`,
			// The agent runs once its postinstall has run.
			"bin/" + spec.Bin:                      "#!/bin/sh\n[ -f " + dir + "/native ] && echo 9.9.9\n",
			"lib/" + spec.Package + "/install.cjs": "require('fs').writeFileSync('" + dir + "/native', '')\n",
		})
		for _, f := range []string{"npm", spec.Bin} {
			if err := os.Chmod(filepath.Join(bin, f), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink(node, filepath.Join(bin, "node")); err != nil {
			t.Fatal(err)
		}
		for i, line := range spec.Install {
			if out, err := installLine(t, line, bin+":/usr/bin:/bin"); err != nil {
				t.Fatalf("%s: line %d: %v: %s", name, i+1, err, out)
			}
		}
		logged, _ := os.ReadFile(filepath.Join(dir, "npm.log"))
		if want := "install -g --no-audit --no-fund --loglevel=error " + spec.Package + "@9.9.9\n"; string(logged) != want {
			t.Errorf("%s: npm ran as %q, want %q", name, logged, want)
		}
		if _, err := os.Stat(filepath.Join(dir, "native")); err != nil {
			t.Errorf("%s: the postinstall was not run for the agent that did not run", name)
		}
	}
}
