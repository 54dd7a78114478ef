//go:build unix

package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forge-run/forge/agent/agenttest"
	"github.com/forge-run/forge/internal/testkit/testfiles"
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

// installLine runs one install line with PATH and vars, as root would in
// an image.
func installLine(t *testing.T, line, path string, vars ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Env = append([]string{"PATH=" + path, "FORGE_AGENT_VERSION=9.9.9", "HOME=" + t.TempDir()}, vars...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Without npm, the first line fails saying what is missing: on this
// machine, Node is not installed for the user; in an image without apt-get
// or apk, it cannot be.
func TestInstallWithoutNode(t *testing.T) {
	for _, name := range BuiltinNames() {
		spec, _ := Builtin(name)
		out, err := installLine(t, spec.Install[0], t.TempDir())
		if err == nil || !strings.Contains(out, "forge: "+name+" needs Node.js") || !strings.Contains(out, "on this machine") {
			t.Errorf("%s: %v: %s; want a failure naming Node.js on this machine", name, err, out)
		}
		out, err = installLine(t, spec.Install[0], t.TempDir(), "FORGE_AGENT_IMAGE=1")
		if err == nil || !strings.Contains(out, "the image has no npm, nor apt-get or apk") {
			t.Errorf("%s in an image: %v: %s; want a failure naming what the image lacks", name, err, out)
		}
	}
}

// The install lines, with stand-ins for npm and the agent: npm installs the
// version asked for under the prefix, and the agent is checked to run; a
// native binary left out by npm is put in place by the package's own
// postinstall.
func TestInstallLines(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not on PATH: the agent tests need Node.js and npm")
	}
	for _, name := range BuiltinNames() {
		spec, _ := Builtin(name)
		dir := t.TempDir()
		tools, prefix := filepath.Join(dir, "tools"), filepath.Join(dir, "prefix")
		testfiles.Write(t, dir, map[string]string{
			// npm root -g --prefix P is P/lib/node_modules.
			"tools/npm": `#!/bin/sh
case "$1" in
root) echo "$4/lib/node_modules" ;;
*) echo "$@" >> "` + dir + `/npm.log" ;;
esac
`,
			// The agent runs once its postinstall has run.
			"prefix/bin/" + spec.Bin:                                   "#!/bin/sh\n[ -f " + dir + "/native ] && echo 9.9.9\n",
			"prefix/lib/node_modules/" + spec.Package + "/install.cjs": "require('fs').writeFileSync('" + dir + "/native', '')\n",
		})
		for _, f := range []string{filepath.Join(tools, "npm"), filepath.Join(prefix, "bin", spec.Bin)} {
			if err := os.Chmod(f, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink(node, filepath.Join(tools, "node")); err != nil {
			t.Fatal(err)
		}
		for i, line := range spec.Install {
			if out, err := installLine(t, line, tools+":/usr/bin:/bin", "FORGE_AGENT_PREFIX="+prefix); err != nil {
				t.Fatalf("%s: line %d: %v: %s", name, i+1, err, out)
			}
		}
		logged, _ := os.ReadFile(filepath.Join(dir, "npm.log"))
		if got := string(logged); !strings.HasPrefix(got, "install -g --prefix "+prefix+" ") || !strings.HasSuffix(got, " "+spec.Package+"@9.9.9\n") {
			t.Errorf("%s: npm ran as %q, want an install of %s@9.9.9 under the prefix", name, logged, spec.Package)
		}
		if _, err := os.Stat(filepath.Join(dir, "native")); err != nil {
			t.Errorf("%s: the postinstall was not run for the agent that did not run", name)
		}
	}
}

// runScript runs spec's Run script with a stand-in for the agent that
// prints its arguments, stdin and environment, as root or not.
func runScript(t *testing.T, spec Spec, vars map[string]string, args ...string) string {
	t.Helper()
	bin := t.TempDir()
	testfiles.Write(t, bin, map[string]string{spec.Bin: `#!/bin/sh
for a in "$@"; do printf 'arg %s\n' "$a"; done
printf 'stdin %s\n' "$(cat)"
printf 'HOME %s\n' "$HOME"
for v in IS_SANDBOX ANTHROPIC_BASE_URL CODEX_HOME; do eval "[ -n \"\${$v+set}\" ] && printf '%s %s\n' $v \"\$$v\""; done
[ -z "$CODEX_HOME" ] || [ -d "$CODEX_HOME" ] || echo "CODEX_HOME missing"
exit 7
`})
	if err := os.Chmod(filepath.Join(bin, spec.Bin), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", append([]string{"-c", spec.Run, "sh"}, args...)...)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.Output()
	if code := cmd.ProcessState.ExitCode(); code != 7 {
		t.Fatalf("exit %d (%v), want the agent's 7; stdout:\n%s", code, err, out)
	}
	return string(out)
}

// The run scripts' contract, with the agent stood in for: what reaches the
// agent for which variables.
func TestRunScripts(t *testing.T) {
	claude, _ := Builtin("claude-code")
	codex, _ := Builtin("codex")
	home := t.TempDir()
	instruction := "-- fix it: \"$HOME\" `x` $(y)\nsecond line"
	root := ""
	if os.Getuid() == 0 {
		root = "IS_SANDBOX 1\n"
	}
	for _, c := range []struct {
		name string
		spec Spec
		vars map[string]string
		args []string
		want string
	}{
		{"claude-code, all set", claude, map[string]string{"HOME": home, "FORGE_INSTRUCTION": instruction,
			"FORGE_MODEL": "m1", "FORGE_MAX_TURNS": "5", "FORGE_API_BASE": "http://h:1"}, []string{"--x", "y z"},
			"arg -p\narg --dangerously-skip-permissions\narg --output-format\narg stream-json\narg --verbose\n" +
				"arg --model\narg m1\narg --max-turns\narg 5\narg --x\narg y z\n" +
				"stdin " + instruction + "\nHOME " + home + "\n" + root + "ANTHROPIC_BASE_URL http://h:1\n"},
		{"claude-code, defaults", claude, map[string]string{"HOME": home, "FORGE_INSTRUCTION": "go",
			"FORGE_MODEL": "", "FORGE_MAX_TURNS": "", "FORGE_API_BASE": ""}, nil,
			"arg -p\narg --dangerously-skip-permissions\narg --output-format\narg stream-json\narg --verbose\n" +
				"stdin go\nHOME " + home + "\n" + root},
		{"codex, all set", codex, map[string]string{"HOME": home, "FORGE_INSTRUCTION": instruction,
			"FORGE_MODEL": "m1", "FORGE_MAX_TURNS": "5", "FORGE_API_BASE": "http://h:1/v1",
			"CODEX_HOME": home + "/codex"}, []string{"--x"},
			"arg exec\narg --json\narg --skip-git-repo-check\narg --dangerously-bypass-approvals-and-sandbox\n" +
				"arg -c\narg model_provider=forge\narg -c\narg model_providers.forge.name=forge\n" +
				"arg -c\narg model_providers.forge.base_url=\"http://h:1/v1\"\n" +
				"arg -c\narg model_providers.forge.wire_api=responses\narg -c\narg model_providers.forge.env_key=OPENAI_API_KEY\n" +
				"arg -m\narg m1\narg --x\narg -\nstdin " + instruction + "\nHOME " + home + "\nCODEX_HOME " + home + "/codex\n"},
		{"codex, defaults", codex, map[string]string{"HOME": home, "FORGE_INSTRUCTION": "go"}, nil,
			"arg exec\narg --json\narg --skip-git-repo-check\narg --dangerously-bypass-approvals-and-sandbox\n" +
				"arg -c\narg model_provider=forge\narg -c\narg model_providers.forge.name=forge\n" +
				"arg -c\narg model_providers.forge.base_url=\"https://api.openai.com/v1\"\n" +
				"arg -c\narg model_providers.forge.wire_api=responses\narg -c\narg model_providers.forge.env_key=OPENAI_API_KEY\n" +
				"arg -\nstdin go\nHOME " + home + "\n"},
	} {
		if got := runScript(t, c.spec, c.vars, c.args...); got != c.want {
			t.Errorf("%s:\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
	// A home the agent cannot write is replaced by a fresh one.
	for _, spec := range []Spec{claude, codex} {
		tmp := t.TempDir()
		got := runScript(t, spec, map[string]string{"HOME": "/nonexistent", "FORGE_INSTRUCTION": "go", "TMPDIR": tmp})
		if !strings.Contains(got, "HOME "+tmp+"/") {
			t.Errorf("%s with an unwritable home:\n%s", spec.Name, got)
		}
	}
}
