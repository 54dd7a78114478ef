package daytona

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/runner"
)

// shQuote quotes s for the sandbox's shell (text.ShellQuote).
var shQuote = text.ShellQuote

// sandboxName is the deterministic name of a job's sandbox,
// forge-<run>-<candidate>[-<task>]-<trial>, made of characters Daytona
// accepts and kept short (long names end in a hash of the full one).
func sandboxName(runID, candidate, task string, trial int) string {
	n := fmt.Sprintf("forge-%s-%s-%d", runID, candidate, trial)
	if task != "" {
		n = fmt.Sprintf("forge-%s-%s-%s-%d", runID, candidate, task, trial)
	}
	b := []byte(n)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '-'
		}
	}
	n = string(b)
	if len(n) > 63 {
		sum := sha256.Sum256([]byte(n))
		n = n[:50] + "-" + hex.EncodeToString(sum[:])[:12]
	}
	return n
}

// layout is where a job lives in its sandbox.
type layout struct {
	home string // the sandbox user's home, as the sandbox reports it
	work string // the job's working directory
	// ctl starts the names of forge's own files (scripts, captured output),
	// next to the working directory: no directory of their own to make.
	ctl string
}

func newLayout(home, candidate string) layout {
	home = strings.TrimRight(home, "/")
	return layout{
		home: home,
		work: home + "/forge/" + candidate,
		ctl:  home + "/forge/.forge-" + candidate,
	}
}

func (l layout) controlScript() string    { return l.ctl + ".sh" }
func (l layout) setupScript() string      { return l.ctl + ".setup.sh" }
func (l layout) stdout() string           { return l.ctl + ".stdout" }
func (l layout) stderr() string           { return l.ctl + ".stderr" }
func (l layout) setupLog() string         { return l.ctl + ".setup.log" }
func (l layout) capped(key string) string { return l.ctl + "." + key + ".cap" }
func (l layout) path(rel string) string   { return l.work + "/" + rel }

// secrets is the file that brings a job's secrets (runner.Job.Secrets) to
// its candidate: uploaded just before the candidate starts (before setup
// with setup_secrets), read and removed by forge.sh before the candidate
// runs, so no file holds them while it runs or after. Never in the
// sandbox's create request, its name or its labels, which the API shows.
func (l layout) secrets() string { return l.ctl + ".secrets" }

// secretsText is the secrets file: one export per secret.
func secretsText(secrets map[string]string) string {
	var b strings.Builder
	writeExports(&b, secrets)
	return b.String()
}

// writeExports writes an export line per variable of env, sorted by name.
func writeExports(b *strings.Builder, env map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(env)) {
		fmt.Fprintf(b, "export %s=%s\n", k, shQuote(env[k]))
	}
}

// readSecrets exports the secrets file's variables, and with remove deletes
// it.
func (l layout) readSecrets(remove bool) string {
	rm := ""
	if remove {
		rm = "; rm -f " + shQuote(l.secrets())
	}
	return fmt.Sprintf("if [ -f %[1]s ]; then . %[1]s%[2]s; fi\n", shQuote(l.secrets()), rm)
}

// preamble starts every script: into the working directory, create what
// could not be uploaded (zero-byte files, the volume link), drop the
// sandbox's DAYTONA_* variables and export the job's environment. In an
// environment's sandbox (its image sets runner.EnvDirVar), a PATH of the
// job's own gets the environment's bin/ first again, as the image's PATH
// has it: no variable of the manifest's overrides that.
func (l layout) preamble(env map[string]string, ensure []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[ -d %[1]s ] || mkdir -p %[1]s\ncd %[1]s || exit 125\n", shQuote(l.work))
	for _, line := range ensure {
		b.WriteString(line + "\n")
	}
	b.WriteString(unsetDaytona)
	writeExports(&b, env)
	if _, ok := env["PATH"]; ok {
		fmt.Fprintf(&b, "if [ -n \"${%[1]s-}\" ]; then export PATH=\"$%[1]s/bin:$PATH\"; fi\n", runner.EnvDirVar)
	}
	return b.String()
}

// unsetDaytona drops the sandbox's DAYTONA_* variables with shell builtins
// only (export -p prints "export NAME=..." in dash, "declare -x NAME=..." in
// bash); lines of multi-line values are skipped by the name check.
const unsetDaytona = `set -f
forge_ifs=$IFS
IFS='
'
for forge_l in $(export -p); do
  forge_l=${forge_l#export }
  forge_l=${forge_l#declare -x }
  forge_n=${forge_l%%=*}
  case $forge_n in
    DAYTONA_*) case $forge_n in *[!A-Za-z0-9_]*) ;; *) unset "$forge_n" ;; esac ;;
  esac
done
IFS=$forge_ifs
unset forge_ifs forge_l forge_n
set +f
`

// Lines forge.sh prints on its own stdout, which is the session command's
// log (the candidate's and the setup's output go to files).
const (
	// doneLine ends what "forge.sh run" and "forge.sh setup" print: the
	// command is over, and the status forge.sh exits with follows, as in
	// "forge-done 0". One more line follows it because the SDK's stream
	// holds a chunk's last two bytes back until more arrive.
	doneLine = "forge-done"
	// inlineLine names, in order, the files whose capped content follows in
	// base64, concatenated: "forge-inline stdout artifact".
	inlineLine = "forge-inline"
	// inlineBudget bounds the bytes forge.sh inlines in its report; bigger
	// outputs are downloaded.
	inlineBudget = 64 << 10
)

// controlScriptText is forge.sh, forge's side of a job in its sandbox:
//
//   - "sh forge.sh run" runs the candidate with argv exactly as given (every
//     element quoted), stdin empty, stdout and stderr into separate files,
//     then prints its report (what collect prints, for stdout, stderr, the
//     artifact, the result file and the transcript) and doneLine with the candidate's exit
//     status, and exits with that status;
//   - "sh forge.sh setup" runs setup.sh into setup.log, then prints doneLine
//     with its status, and exits with it;
//   - "sh forge.sh collect KEY..." prints the report for the named outputs
//     (stdout, stderr, setup, artifact, result, transcript).
//
// "run" and "setup" run their work at most once per sandbox, however often
// they are started (claimText): a later start reports what the first did.
func (l layout) controlScriptText(argv []string, env map[string]string, ensure []string, o outputs) string {
	var b strings.Builder
	b.WriteString("# generated by forge\nforge_collect() {\n")
	b.WriteString(l.collectScriptText(o))
	b.WriteString("}\n")
	fmt.Fprintf(&b, "forge_ctl=%s\n", shQuote(l.ctl))
	b.WriteString(claimText)
	fmt.Fprintf(&b, `case $1 in
collect) shift; forge_want="$*"; forge_collect; exit ;;
setup)
  if forge_claim setup; then
    sh %s >%s 2>&1; forge_rc=$?
    echo "$forge_rc -1 ok" >"$forge_ctl.setup.done"
  else
    forge_await setup
  fi
  printf '%[3]s %%s\n.\n' "$forge_rc"; exit $forge_rc ;;
run)
  if ! forge_claim run; then
    forge_await run
    forge_want='stdout stderr artifact result transcript'
    forge_collect
    printf '%[3]s %%s\n.\n' "$forge_rc"; exit $forge_rc
  fi ;;
*) echo "forge.sh: no mode $1" >&2; exit 2 ;;
esac
forge_path=$PATH
`, shQuote(l.setupScript()), shQuote(l.setupLog()), doneLine)
	b.WriteString(clockText)
	b.WriteString(l.preamble(env, ensure))
	b.WriteString(l.readSecrets(true))
	// The candidate's runtime is measured here, next to its process: the
	// clock is read just before it starts and just after it exits.
	b.WriteString("forge_now; forge_t0=$forge_t\n")
	for i, a := range argv {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(shQuote(a))
	}
	fmt.Fprintf(&b, " </dev/null >%s 2>%s\n", shQuote(l.stdout()), shQuote(l.stderr()))
	// The report runs with forge's PATH, whatever the job's env set; it is a
	// function in this shell, not a subshell, to spare a process.
	fmt.Fprintf(&b, `forge_rc=$?
PATH=$forge_path
forge_now
if [ -n "$forge_t0" ] && [ -n "$forge_t" ]; then forge_ns=$((forge_t - forge_t0)); fi
forge_want='stdout stderr artifact result transcript'
forge_collect
echo "$forge_rc ${forge_ns:--1} ok" >"$forge_ctl.run.done"
printf '%s %%s\n.\n' "$forge_rc"
exit $forge_rc
`, doneLine)
	return b.String()
}

// claimText makes "forge.sh run" and "forge.sh setup" safe to start more
// than once (a start whose answer was lost is sent again): forge_claim
// MODE takes the mode's claim, <ctl>.MODE.claim, created with noclobber
// (O_EXCL: of any number of starts, exactly one gets it) by shell builtins
// alone; the one that has it runs the candidate (or the setup) and, once
// it has reported, writes <ctl>.MODE.done ("STATUS RUNTIME_NS ok", one
// write). Any other start runs nothing: forge_await waits for that file
// (at once in a session, whose commands run one after another) and takes
// the first start's status and runtime, so that it reports what the first
// did and ends as it ended. forge follows whichever start it knows.
const claimText = `forge_claim() {
  set -C
  if { :; } 2>/dev/null >"$forge_ctl.$1.claim"; then set +C; return 0; fi
  set +C; return 1
}
forge_await() {
  while :; do
    if [ -f "$forge_ctl.$1.done" ] && read forge_rc forge_ns forge_ok <"$forge_ctl.$1.done" && [ "$forge_ok" = ok ]; then return; fi
    sleep 0.1 2>/dev/null || sleep 1
  done
}
`

// clockText defines forge_now, which sets forge_t to a clock in
// nanoseconds: date's %N where it has one (GNU, busybox), else
// /proc/uptime (centiseconds), else nothing. The clock is chosen once,
// with forge's PATH, before the job's environment (which may set its own
// PATH) is exported; the centiseconds are read without leading zeros so
// that the shell never takes them for octal.
const clockText = `forge_date=$(command -v date 2>/dev/null)
case $("${forge_date:-date}" +%s%N 2>/dev/null) in ''|*[!0-9]*) forge_date= ;; esac
forge_now() {
  forge_t=
  if [ -n "$forge_date" ]; then forge_t=$("$forge_date" +%s%N); return; fi
  if read forge_u forge_x </proc/uptime 2>/dev/null; then
    case $forge_u in
    *.??) forge_t=$(( ${forge_u%.*} * 1000000000 + 1${forge_u#*.} * 10000000 - 1000000000 )) ;;
    esac
  fi
}
`

// setupScriptText runs the manifest's setup lines in order, each after a
// "+ line" trace, and stops at the first that fails, with its exit status.
// Nothing follows what the failing line printed (failingSetupOutput).
func (l layout) setupScriptText(lines []string, env map[string]string, ensure []string, secrets bool) string {
	var b strings.Builder
	b.WriteString("# generated by forge\n")
	b.WriteString(l.preamble(env, ensure))
	if secrets {
		b.WriteString(l.readSecrets(false))
	}
	b.WriteString("exec </dev/null\n")
	for _, line := range lines {
		fmt.Fprintf(&b, "printf '+ %%s\\n' %s\n", shQuote(line))
		b.WriteString(line + "\n")
		b.WriteString("forge_rc=$?; [ $forge_rc -eq 0 ] || exit $forge_rc\n")
	}
	return b.String()
}

// outputs are the files of the working directory forge.sh reports on
// (paths relative to it) and the caps: stdout, stderr and the setup log
// at outCap, the artifact and the result file at artCap, the transcript
// at trCap.
type outputs struct {
	artifact, result, transcript string
	outCap, artCap, trCap        int64
}

// jobOutputs are the outputs of a job whose artifact is outputFile.
func jobOutputs(outputFile string, lim runner.Limits) outputs {
	return outputs{artifact: outputFile, result: runner.ResultFile, transcript: runner.TranscriptFile,
		outCap: lim.OutputCap(), artCap: lim.ArtifactCap(), trCap: lim.TranscriptCap()}
}

// capOf is the cap of the output key ("stdout", ..., "transcript"); 0
// for a key forge.sh does not report.
func (o outputs) capOf(key string) int64 {
	switch key {
	case "stdout", "stderr", "setup":
		return o.outCap
	case "artifact", "result":
		return o.artCap
	case "transcript":
		return o.trCap
	}
	return 0
}

// collectScriptText is the body of forge.sh's forge_collect, which runs in
// forge.sh's own shell (so it returns, never exits) and in the C locale
// (bytes are bytes; the tools start faster without locale files): it
// measures what the job left, with one wc for all files (read through a
// here-document: no subshell, no file), cuts capped copies
// (<ctl>.<key>.cap) of those over their cap and prints one JSON line
// (collected). Then, when the sandbox has base64, it inlines the (capped)
// content of the non-empty regular files named in $forge_want while they
// fit in inlineBudget: a line "forge-inline KEY..." and the base64 of their
// contents, concatenated in that order (one cat, one base64). The
// transcript comes last: the others are inlined first.
func (l layout) collectScriptText(o outputs) string {
	return fmt.Sprintf(`LC_ALL=C; export LC_ALL
c=%s
art=%s
res=%s
tr=%s
reg() { if [ -L "$1" ]; then K=symlink; elif [ -f "$1" ] && [ -r "$1" ]; then K=file; elif [ -f "$1" ]; then K=unreadable; elif [ -e "$1" ]; then K=other; else K=missing; fi
  if [ "$K" = file ]; then R=$1; else R=/dev/null; fi; }
reg "$c.stdout"; f1=$R; k1=$K
reg "$c.stderr"; f2=$R; k2=$K
reg "$c.setup.log"; f3=$R; k3=$K
reg "$art"; f4=$R; k4=$K
reg "$res"; f5=$R; k5=$K
reg "$tr"; f6=$R; k6=$K
{ read s1 x; read s2 x; read s3 x; read s4 x; read s5 x; read s6 x; } <<forge_sizes
$(wc -c "$f1" "$f2" "$f3" "$f4" "$f5" "$f6")
forge_sizes
[ -n "$s6" ] || return 1
cut() { if [ "$2" -gt "$3" ]; then head -c "$3" "$1" > "$4" || return 1; fi; }
cut "$f1" "$s1" %[5]d "$c.stdout.cap" || return 1
cut "$f2" "$s2" %[5]d "$c.stderr.cap" || return 1
cut "$f3" "$s3" %[5]d "$c.setup.cap" || return 1
cut "$f4" "$s4" %[6]d "$c.artifact.cap" || return 1
cut "$f5" "$s5" %[6]d "$c.result.cap" || return 1
cut "$f6" "$s6" %[7]d "$c.transcript.cap" || return 1
sz() { if [ "$1" = file ]; then S=$2; else S=-1; fi; }
sz $k1 $s1; o1=$S; sz $k2 $s2; o2=$S; sz $k3 $s3; o3=$S; sz $k4 $s4; o4=$S; sz $k5 $s5; o5=$S; sz $k6 $s6; o6=$S
printf '{"stdout":%%s,"stderr":%%s,"setup":%%s,"artifact":%%s,"artifact_kind":"%%s","result":%%s,"result_kind":"%%s","transcript":%%s,"transcript_kind":"%%s","runtime_ns":%%s}\n' \
  "$o1" "$o2" "$o3" "$o4" "$k4" "$o5" "$k5" "$o6" "$k6" "${forge_ns:--1}"
command -v base64 >/dev/null 2>&1 || return 0
left=%[8]d; keys=
pick() {
  case " $forge_want " in *" $1 "*) ;; *) return 1 ;; esac
  [ "$2" -gt 0 ] || return 1
  n=$2; P=$4
  if [ "$n" -gt "$3" ]; then n=$3; P=$c.$1.cap; fi
  [ "$n" -le "$left" ] || return 1
  left=$((left - n)); keys="$keys $1"
}
set --
if pick stdout "$o1" %[5]d "$f1"; then set -- "$@" "$P"; fi
if pick stderr "$o2" %[5]d "$f2"; then set -- "$@" "$P"; fi
if pick setup "$o3" %[5]d "$f3"; then set -- "$@" "$P"; fi
if pick artifact "$o4" %[6]d "$f4"; then set -- "$@" "$P"; fi
if pick result "$o5" %[6]d "$f5"; then set -- "$@" "$P"; fi
if pick transcript "$o6" %[7]d "$f6"; then set -- "$@" "$P"; fi
[ $# -gt 0 ] || return 0
printf '%[9]s%%s\n' "$keys"
if [ $# -eq 1 ]; then base64 "$1"; else cat "$@" | base64; fi
`, shQuote(l.ctl), shQuote(l.path(o.artifact)), shQuote(l.path(o.result)), shQuote(l.path(o.transcript)),
		o.outCap, o.artCap, o.trCap, inlineBudget, inlineLine)
}

// collected is the JSON line of forge.sh's report. Sizes are -1 for
// anything but a readable regular file; the kinds are file, symlink,
// unreadable, other or missing.
type collected struct {
	Stdout       int64  `json:"stdout"`
	Stderr       int64  `json:"stderr"`
	Setup        int64  `json:"setup"`
	Artifact     int64  `json:"artifact"`
	ArtifactKind string `json:"artifact_kind"`
	Result       int64  `json:"result"`
	ResultKind   string `json:"result_kind"`
	// Transcript is the transcript's size (FORGE_TRANSCRIPT), of kind
	// TranscriptKind; a report without them says there is none.
	Transcript     int64  `json:"transcript"`
	TranscriptKind string `json:"transcript_kind"`
	// RuntimeNS is the candidate's own runtime as forge.sh measured it in
	// the sandbox; -1 when unknown (no clock, or "collect" alone).
	RuntimeNS int64 `json:"runtime_ns"`
}
