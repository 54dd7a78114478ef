package agent

import "fmt"

// Format is an agent log format forge can read.
type Format string

const (
	FormatNone       Format = ""
	FormatClaudeCode Format = "claude-stream-json"
	FormatCodex      Format = "codex-json"
)

// Spec is an agent forge can install and run.
type Spec struct {
	Name    string // "claude-code"
	Package string // npm package, "@anthropic-ai/claude-code"
	Version string // the version this project tests; a manifest may pin another
	// Install are shell lines, each a build step of its own, run once per
	// image (as root, FORGE_AGENT_IMAGE=1) or per local environment, with
	// FORGE_AGENT_VERSION set: they install the agent under
	// FORGE_AGENT_PREFIX, whose bin/ then holds Bin. Node comes first where an
	// image lacks it (apt-get on Debian/Ubuntu images, apk on Alpine; else a
	// clear message); locally it must be there already.
	Install []string
	Bin     string // "claude"
	// Run is a POSIX sh script that runs the agent unattended, reading only
	// these variables: FORGE_INSTRUCTION (the prompt), FORGE_MODEL,
	// FORGE_MAX_TURNS (may be empty), FORGE_API_BASE (may be empty: the
	// vendor's default), the key variable KeyEnv; extra user arguments come as "$@".
	// It writes the agent's JSON log on stdout and exits with the agent's status.
	Run    string
	KeyEnv string // "ANTHROPIC_API_KEY", "OPENAI_API_KEY"
	// BaseEnv is the host variable that, when set, points its model API
	// elsewhere (FORGE_API_BASE): "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL".
	BaseEnv string
	Env     map[string]string // fixed environment (telemetry off, ...)
	Log     Format
}

// Run is started as sh -c RUN sh ARGS... (ARGS are "$@"), in the task's
// working directory, with Env and the FORGE_* variables set. What each
// agent reads besides, and why, is said beside its script below.

// homeLine gives the agent a writable home: both keep their state there
// (~/.claude, ~/.codex), and a job's user may have none.
const homeLine = `[ -w "${HOME:-/nonexistent}" ] || { HOME=$(mktemp -d) && export HOME; } || exit`

// claudeRun runs claude-code. FORGE_API_BASE is ANTHROPIC_BASE_URL (the
// base without /v1). As root, claude-code refuses
// --dangerously-skip-permissions unless IS_SANDBOX=1. The instruction goes
// on stdin, so that one starting with "-" is no option and a long one meets
// no argument limit.
const claudeRun = homeLine + `
[ "$(id -u)" = 0 ] && export IS_SANDBOX=1
[ -n "${FORGE_API_BASE:-}" ] && export ANTHROPIC_BASE_URL="$FORGE_API_BASE"
[ -n "${FORGE_MAX_TURNS:-}" ] && set -- --max-turns "$FORGE_MAX_TURNS" "$@"
[ -n "${FORGE_MODEL:-}" ] && set -- --model "$FORGE_MODEL" "$@"
exec claude -p --dangerously-skip-permissions --output-format stream-json --verbose "$@" <<FORGE_INSTRUCTION_END
$FORGE_INSTRUCTION
FORGE_INSTRUCTION_END
`

// codexRun runs codex. It has no turn limit: FORGE_MAX_TURNS is not read.
// Its model provider is one of its own, at FORGE_API_BASE (the base with
// /v1, as OPENAI_BASE_URL) or OpenAI's: codex's own provider ignores
// OPENAI_BASE_URL for WebSockets to the public API. CODEX_HOME, if set,
// must exist. The instruction goes on stdin ("-"), which also keeps codex
// from waiting for more input there.
const codexRun = homeLine + `
[ -z "${CODEX_HOME:-}" ] || mkdir -p "$CODEX_HOME" || exit
[ -n "${FORGE_MODEL:-}" ] && set -- -m "$FORGE_MODEL" "$@"
exec codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox \
	-c model_provider=forge -c model_providers.forge.name=forge \
	-c "model_providers.forge.base_url=\"${FORGE_API_BASE:-https://api.openai.com/v1}\"" \
	-c model_providers.forge.wire_api=responses -c model_providers.forge.env_key=OPENAI_API_KEY \
	"$@" - <<FORGE_INSTRUCTION_END
$FORGE_INSTRUCTION
FORGE_INSTRUCTION_END
`

// nodeLine installs Node.js and npm where the image lacks npm, and checks
// that node is at least major, naming the agent when it cannot.
func nodeLine(agent string, major int) string {
	return fmt.Sprintf(`if ! command -v npm >/dev/null 2>&1; then `+
		`if [ "${FORGE_AGENT_IMAGE:-}" != 1 ]; then echo "forge: %[1]s needs Node.js %[2]d or later and npm on this machine: install them, or play on --daytona" >&2; exit 1; `+
		`elif command -v apt-get >/dev/null 2>&1; then { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm ca-certificates >/dev/null; } || exit; `+
		`elif command -v apk >/dev/null 2>&1; then apk add --no-cache nodejs npm >/dev/null || exit; `+
		`else echo "forge: %[1]s needs Node.js %[2]d or later and npm: the image has no npm, nor apt-get or apk to install them" >&2; exit 1; fi; fi; `+
		`node -e 'process.exit(parseInt(process.versions.node) < %[2]d ? 1 : 0)' || `+
		`{ echo "forge: %[1]s needs Node.js %[2]d or later; the image has $(node --version)" >&2; exit 1; }`, agent, major)
}

// npmLine installs the package's FORGE_AGENT_VERSION under
// FORGE_AGENT_PREFIX (bin/ there is on the agent's PATH), with a cache of
// its own (the builder's home may be none of its own), trusting the
// system's certificates besides Node's own (a registry behind a proxy the
// system trusts); checkLine checks that bin runs, running the package's
// postinstall by hand when npm did not (claude-code's puts its native
// binary in place).
func npmLine(pkg string) string {
	return `c=$(mktemp -d) && { [ ! -r /etc/ssl/certs/ca-certificates.crt ] || export NODE_EXTRA_CA_CERTS="${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}"; } && ` +
		`npm install -g --prefix "$FORGE_AGENT_PREFIX" --cache "$c" --no-audit --no-fund --no-update-notifier --loglevel=error "` + pkg + `@$FORGE_AGENT_VERSION"; s=$?; rm -rf "$c"; exit $s`
}

func checkLine(pkg, bin string) string {
	return `PATH="$FORGE_AGENT_PREFIX/bin:$PATH"; ` + bin + ` --version >/dev/null 2>&1 || { f="$(npm root -g --prefix "$FORGE_AGENT_PREFIX")/` + pkg + `/install.cjs"; [ -f "$f" ] && node "$f"; }; ` + bin + ` --version`
}

// Builtin returns the built-in agent named name.
func Builtin(name string) (Spec, bool) {
	switch name {
	case "claude-code":
		const pkg, bin = "@anthropic-ai/claude-code", "claude"
		return Spec{
			Name: name, Package: pkg, Version: "2.1.328", Bin: bin,
			// It is a native binary: Node serves npm and the postinstall
			// only (18 runs it, though 2.1 declares 22).
			Install: []string{nodeLine(name, 18), npmLine(pkg), checkLine(pkg, bin)},
			Run:     claudeRun,
			KeyEnv:  "ANTHROPIC_API_KEY",
			BaseEnv: "ANTHROPIC_BASE_URL",
			Env: map[string]string{
				"DISABLE_TELEMETRY":                        "1",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
				"DISABLE_AUTOUPDATER":                      "1",
				// A refused key (401) is retried 10 times over 3 minutes by
				// default; 2 retries end it in about 2.5 s with the
				// agent's own message, and still ride out a passing fault.
				"CLAUDE_CODE_MAX_RETRIES": "2",
			},
			Log: FormatClaudeCode,
		}, true
	case "codex":
		const pkg, bin = "@openai/codex", "codex"
		return Spec{
			Name: name, Package: pkg, Version: "0.171.0", Bin: bin,
			Install: []string{nodeLine(name, 16), npmLine(pkg), checkLine(pkg, bin)},
			Run:     codexRun,
			KeyEnv:  "OPENAI_API_KEY",
			BaseEnv: "OPENAI_BASE_URL",
			// A refused key ends after 5 quick reconnections (about 7 s),
			// an unknown model at once: nothing to bound.
			Env: map[string]string{},
			Log: FormatCodex,
		}, true
	}
	return Spec{}, false
}

// BuiltinNames are the built-in agents' names, sorted.
func BuiltinNames() []string {
	return []string{"claude-code", "codex"}
}
