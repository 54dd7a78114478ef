package daytona

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/runner"
)

var shQuote = text.ShellQuote

// sandboxName is the name of a job's sandbox,
// forge-<run>-<candidate>[-<task>]-<trial>, in characters Daytona accepts;
// a long one ends in a hash of the whole.
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

// layout is where a job lives in its sandbox: its working directory, and
// beside it forge's own files (output, claims, secrets), named ctl.*.
type layout struct {
	home, work, ctl string
	// start is where the setup, candidate and verifier start: work, or
	// the image's working directory (runner.Job.InImageWorkdir).
	start string
	// tests and logs are the verifier's directories: beside work, or
	// Harbor's (runner.Verify.AtRoot).
	tests, logs string
}

func newLayout(home, candidate string) layout {
	home = strings.TrimRight(home, "/")
	work, ctl := home+"/forge/"+candidate, home+"/forge/.forge-"+candidate
	return layout{home: home, work: work, ctl: ctl, start: work, tests: ctl + ".tests", logs: ctl + ".logs/verifier"}
}

func (l layout) path(rel string) string { return l.work + "/" + rel }

// secrets is the file that brings a job's secrets to its candidate,
// uploaded just before it (or setup) starts and removed before it runs:
// never in what the API shows (create request, labels).
func (l layout) secrets() string { return l.ctl + ".secrets" }

// exports is an export line per variable, sorted by name.
func exports(env map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(env)) {
		fmt.Fprintf(&b, "export %s=%s\n", k, shQuote(env[k]))
	}
	return b.String()
}

// readSecrets exports the secrets file's variables, and with remove
// deletes it.
func (l layout) readSecrets(remove bool) string {
	rm := ""
	if remove {
		rm = "; rm -f " + shQuote(l.secrets())
	}
	return fmt.Sprintf("if [ -f %[1]s ]; then . %[1]s%[2]s; fi\n", shQuote(l.secrets()), rm)
}

// preamble starts the candidate and the setup: into the working directory,
// write what was not uploaded, drop DAYTONA_* and export env. A PATH of the
// job's own keeps an environment's bin/ first, as its image has it.
func (l layout) preamble(env map[string]string, ensure []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[ -d %[1]s ] || mkdir -p %[1]s\ncd %[1]s || exit 125\n", shQuote(l.work))
	for _, line := range ensure {
		b.WriteString(line + "\n")
	}
	if l.start != l.work {
		fmt.Fprintf(&b, "cd %s || exit 125\n", shQuote(l.start))
	}
	b.WriteString(unsetDaytona)
	b.WriteString(exports(env))
	if _, ok := env["PATH"]; ok {
		fmt.Fprintf(&b, "if [ -n \"${%[1]s-}\" ]; then export PATH=\"$%[1]s/bin:$PATH\"; fi\n", runner.EnvDirVar)
	}
	return b.String()
}

// unsetDaytona drops DAYTONA_* with builtins only (export -p: "export N=" in
// dash, "declare -x N=" in bash); lines of multi-line values fail the name
// check.
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

// Lines forge.sh prints on its stdout, the command's log: its report
// ("forge-runtime NS", "forge-size KEY KIND SIZE" per output, "forge-output
// KEY ENCODING" before an output's capped content in base64 or od's hex),
// then the done line with its exit status and a "." line (the SDK's stream
// holds a chunk's last two bytes back).
const (
	runtimeLine = "forge-runtime"
	sizeLine    = "forge-size"
	outputLine  = "forge-output"
	doneLine    = "forge-done"
	failedLine  = "forge-failed" // forge.sh could not do its part: the rest of the line says why
)

// outputKeys are the outputs a finished candidate reports.
const outputKeys = "stdout stderr artifact result transcript"

// scriptText is forge.sh, sent whole as each session command ("sh -c
// SCRIPT forge MODE"): "run" runs argv (stdout and stderr into files),
// "setup" the setup lines into its log, "collect KEY..." nothing (after a
// timeout); each then prints its report and doneLine, and exits with its
// status. "run" and "setup" work once however often started (claimText).
// With a verifier (verify, its script), "verify PID:START..." runs it
// (verifyMode, isolateText), "run" prints what runs as the candidate
// starts (procsLine), and tools is forge_tools (toolsText), run as the
// candidate starts and as the verifier does.
func (l layout) scriptText(argv []string, env map[string]string, ensure, setup []string, setupSecrets bool, verify, tools string, o outputs) string {
	var b strings.Builder
	fmt.Fprintf(&b, "forge_ctl=%s\nforge_report() {\n%s}\n%s%s%s", shQuote(l.ctl), l.reportText(o), filesText, claimText, tools)
	checkTools, verifyCase := "", ""
	if tools != "" {
		checkTools = "forge_tools\n"
	}
	if verify != "" {
		b.WriteString(l.isolateText(verify))
		verifyCase = verifyMode(checkTools)
	}
	runEnsure := ensure
	setupText := ""
	if len(setup) > 0 {
		setupText, runEnsure = l.setupText(setup, env, ensure, setupSecrets), nil
	}
	fmt.Fprintf(&b, `forge_end() { forge_report; printf '%[3]s %%s\n.\n' "$forge_rc"; exit $forge_rc; }
case $1 in
collect) shift; forge_want="$*"; forge_rc=0; forge_end ;;
setup)
  if forge_claim setup; then
    sh -c %[1]s >%[2]s 2>&1; forge_rc=$?
    echo "$forge_rc -1 ok" >"$forge_ctl.setup.done"
  else
    forge_await setup
  fi
  forge_want=; [ "$forge_rc" -eq 0 ] || forge_want=setup
  forge_end ;;
%[5]srun) if ! forge_claim run; then forge_await run; forge_want='%[4]s'; forge_end; fi ;;
*) echo "forge: no mode $1" >&2; exit 2 ;;
esac
forge_path=$PATH
`, shQuote(setupText), shQuote(l.ctl+".setup.log"), doneLine, outputKeys, verifyCase)
	b.WriteString(checkTools) // before anything of the candidate's runs
	if verify != "" {
		b.WriteString(l.rewardDirText())
		b.WriteString("forge_procs\n") // what runs before it (isolateText)
	}
	b.WriteString(clockText)
	b.WriteString(l.preamble(env, runEnsure))
	b.WriteString(l.readSecrets(true))
	b.WriteString("forge_now; forge_t0=$forge_t\n") // the runtime, measured next to the process
	fmt.Fprintf(&b, "%s </dev/null >%s 2>%s\n", text.ShellQuoted(argv), shQuote(l.ctl+".stdout"), shQuote(l.ctl+".stderr"))
	// The report runs with forge's PATH, whatever the job's env set.
	fmt.Fprintf(&b, `forge_rc=$?
PATH=$forge_path
forge_now
if [ -n "$forge_t0" ] && [ -n "$forge_t" ]; then forge_ns=$((forge_t - forge_t0)); fi
echo "$forge_rc ${forge_ns:--1} ok" >"$forge_ctl.run.done"
forge_want='%s'; forge_end
`, outputKeys)
	return b.String()
}

// claimText: forge_claim MODE makes the directory forge's files live in
// (nothing else does: a sandbox's home starts as its image left it), then
// creates <ctl>.MODE.claim with noclobber (O_EXCL: one start of many gets
// it), which writes <ctl>.MODE.done ("STATUS RUNTIME_NS ok") when done; the
// others forge_await it. A claim that fails with no claim there (a missing
// or read-only directory, a full disk) can never be made: forge_fail ends
// the command at once with the shell's error (failedLine).
const claimText = `forge_fail() {
  printf '%s %s\n' ` + failedLine + ` "$(printf %s "$1" | tr '\n' ' ')"
  printf '` + doneLine + ` 125\n.\n'
  exit 125
}
forge_claim() {
  forge_err=$(mkdir -p "${forge_ctl%/*}" 2>&1) || forge_fail "claim $forge_ctl.$1.claim: $forge_err"
  set -C
  if forge_err=$( { :; } 2>&1 >"$forge_ctl.$1.claim" ); then set +C; return 0; fi
  set +C
  [ -e "$forge_ctl.$1.claim" ] && return 1
  forge_fail "claim $forge_ctl.$1.claim: $forge_err"
}
forge_await() {
  while :; do
    if [ -f "$forge_ctl.$1.done" ] && read forge_rc forge_ns forge_ok <"$forge_ctl.$1.done" && [ "$forge_ok" = ok ]; then return; fi
    sleep 0.1 2>/dev/null || sleep 1
  done
}
`

// clockText: forge_now sets forge_t to nanoseconds from date's %N, else
// /proc/uptime (centiseconds, without leading zeros: not octal), else
// nothing; chosen with forge's PATH, before the job's env is exported.
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

// toolLine is what forge_tools prints of each verifier tool it finds:
// "forge-tool NAME DIGEST PATH".
const toolLine = "forge-tool"

// toolsText is forge_tools, which prints a toolLine for each of the
// verifier's tools (runner.Verify.Tools) found on its PATH: the sha256 of
// the file (cksum's sum without sha256sum; "-" without either).
func toolsText(v *runner.Verify) string {
	path := `"$PATH"`
	if _, ok := v.Env["PATH"]; ok {
		path = shQuote(v.ToolPath(""))
	}
	return fmt.Sprintf(`forge_tools() {
  for forge_n in %[1]s; do
    case $forge_n in
    /*) forge_p=$forge_n ;;
    */*) continue ;;
    *) forge_p=$(PATH=%[2]s; command -v "$forge_n" 2>/dev/null) ;;
    esac
    [ -f "$forge_p" ] || continue
    forge_s=$(sha256sum <"$forge_p" 2>/dev/null || cksum <"$forge_p" 2>/dev/null)
    forge_s=${forge_s%%%% *}
    printf '%[3]s %%s %%s %%s\n' "$forge_n" "${forge_s:--}" "$forge_p"
  done
}
`, text.ShellQuoted(v.Tools()), path, toolLine)
}

// parseTools reads the toolLines of forge.sh's output; nil when it has
// none.
func parseTools(text []byte) runner.ToolPrints {
	var tools runner.ToolPrints
	for line := range strings.Lines(string(text)) {
		f := strings.SplitN(strings.TrimRight(line, "\n"), " ", 4)
		if len(f) == 4 && f[0] == toolLine {
			if tools == nil {
				tools = runner.ToolPrints{}
			}
			tools[f[1]] = runner.Tool{Path: f[3], Print: f[2]}
		}
	}
	return tools
}

// verifyText runs the verifier's command where the candidate started, in
// its own environment (env: neither the candidate's variables nor its
// secrets), after making the empty files the SDK cannot upload (ensure);
// forge_verify (isolateText) has made its reward directory.
func (l layout) verifyText(command string, env map[string]string, ensure []string) string {
	var b strings.Builder
	for _, line := range ensure {
		b.WriteString(line + "\n")
	}
	fmt.Fprintf(&b, "cd %s || exit 125\n", shQuote(l.start))
	b.WriteString(unsetDaytona)
	b.WriteString(exports(env))
	b.WriteString("exec </dev/null\n")
	b.WriteString(command + "\n")
	return b.String()
}

// setupText runs the setup lines in order, each after a "+ line" trace,
// and stops at the first that fails, with its status: nothing follows what
// it printed (failingSetupOutput).
func (l layout) setupText(lines []string, env map[string]string, ensure []string, secrets bool) string {
	var b strings.Builder
	b.WriteString(l.preamble(env, ensure))
	if secrets {
		b.WriteString(l.readSecrets(false))
	}
	b.WriteString("exec </dev/null\n")
	for _, line := range lines {
		fmt.Fprintf(&b, "printf '+ %%s\\n' %s\n%s\nforge_rc=$?; [ $forge_rc -eq 0 ] || exit $forge_rc\n", shQuote(line), line)
	}
	return b.String()
}

// outputs are the files forge.sh reports on, relative to the working
// directory, and their caps: outCap for stdout, stderr and the setup log,
// artCap for the artifact and the result, trCap for the transcript.
type outputs struct {
	artifact, result, transcript string
	outCap, artCap, trCap        int64
}

// capOf is the cap of the output key; 0 for one forge.sh does not report.
func (o outputs) capOf(key string) int64 {
	switch key {
	case "stdout", "stderr", "setup", "verifier":
		return o.outCap
	case "artifact", "result":
		return o.artCap
	case "transcript":
		return o.trCap
	case "reward", "rewardjson":
		return runner.MaxRewardBytes
	}
	return 0
}

// maxReport bounds a report: every output at its cap in hex (three bytes a
// byte), and the lines about them.
func (o outputs) maxReport() int {
	return int(3*(4*o.outCap+2*o.artCap+o.trCap+2*runner.MaxRewardBytes)) + 64<<10
}

// reportText is forge_report, run in forge.sh's shell in the C locale: the
// kind and size of every output, and the content of the non-empty files
// named in $forge_want. The reward files are forge_verify's to report
// (isolateText), from where the verifier wrote them.
func (l layout) reportText(o outputs) string {
	return encodingText + fmt.Sprintf(`printf '%[1]s %%s\n' "${forge_ns:--1}"
forge_files stdout "$forge_ctl.stdout" %[5]d stderr "$forge_ctl.stderr" %[5]d setup "$forge_ctl.setup.log" %[5]d \
  artifact %[2]s %[6]d result %[3]s %[6]d transcript %[4]s %[7]d verifier "$forge_ctl.verify.log" %[5]d
`, runtimeLine, shQuote(l.path(o.artifact)), shQuote(l.path(o.result)), shQuote(l.path(o.transcript)),
		o.outCap, o.artCap, o.trCap)
}

// encodingText sets the C locale and the encoding forge_files uses, $e:
// base64, else od's hex.
const encodingText = `LC_ALL=C; export LC_ALL
if command -v base64 >/dev/null 2>&1; then e=base64; else e=hex; fi
`

// filesText is forge_files KEY PATH CAP...: for each file, a sizeLine
// with its kind and size, and, for a key in $forge_want, an outputLine and
// its content, capped, in the encoding $e.
const filesText = `forge_files() {
  while [ $# -gt 0 ]; do
    if [ -L "$2" ]; then k=symlink; elif [ -f "$2" ] && [ -r "$2" ]; then k=file; elif [ -f "$2" ]; then k=unreadable; elif [ -e "$2" ]; then k=other; else k=missing; fi
    s=-1; if [ $k = file ]; then s=$(($(wc -c <"$2"))); fi
    printf '` + sizeLine + ` %s %s %s\n' "$1" $k $s
    case " $forge_want " in *" $1 "*) if [ $s -gt 0 ]; then
      printf '` + outputLine + ` %s %s\n' "$1" $e
      if [ $e = base64 ]; then head -c "$3" "$2" | base64; else head -c "$3" "$2" | od -An -v -tx1; fi
    fi ;; esac
    shift 3
  done
}
`

// report is forge.sh's account of what a job left: each output's kind
// (file, symlink, unreadable, other, missing) and size, the capped content
// of those asked for, and the candidate's runtime (-1: unknown).
type report struct {
	kinds     map[string]string
	sizes     map[string]int64
	files     map[string][]byte
	runtimeNS int64
}

// size is an output's size; -1 unless it is a readable regular file.
func (r report) size(key string) int64 {
	if r.kinds[key] != "file" {
		return -1
	}
	return r.sizes[key]
}

// parseReport reads what forge.sh printed before its done line; lines it
// does not know are skipped.
func parseReport(text []byte, capOf func(key string) int64) (report, error) {
	rep := report{kinds: map[string]string{}, sizes: map[string]int64{}, files: map[string][]byte{}, runtimeNS: -1}
	lines := strings.Split(string(text), "\n")
	for i := 0; i < len(lines); i++ {
		f := strings.Fields(lines[i])
		var err error
		switch {
		case len(f) == 2 && f[0] == runtimeLine:
			rep.runtimeNS, err = strconv.ParseInt(f[1], 10, 64)
		case len(f) == 4 && f[0] == sizeLine && capOf(f[1]) > 0:
			rep.kinds[f[1]] = f[2]
			rep.sizes[f[1]], err = strconv.ParseInt(f[3], 10, 64)
		case len(f) > 0 && f[0] == outputLine:
			end := i + 1
			for end < len(lines) && !strings.HasPrefix(lines[end], "forge-") {
				end++
			}
			if len(f) != 3 || capOf(f[1]) <= 0 || rep.files[f[1]] != nil {
				return report{}, fmt.Errorf("unexpected line %q in the report", lines[i])
			}
			data, err := decodeOutput(f[2], strings.Join(lines[i+1:end], ""))
			if err == nil && len(data) == 0 {
				err = errors.New("none")
			}
			if err != nil {
				return report{}, fmt.Errorf("the content of %s in the report: %w", f[1], err)
			}
			rep.files[f[1]] = data[:min(int64(len(data)), capOf(f[1]))]
			i = end - 1
		}
		if err != nil {
			return report{}, fmt.Errorf("report line %q: %w", lines[i], err)
		}
	}
	if len(rep.kinds) == 0 {
		return report{}, errors.New("no report")
	}
	return rep, nil
}

// scriptFailure is what forge.sh said it could not do (its first
// failedLine) as the job's error; nil when it said nothing of the kind. A
// reward directory the image's user may not make fails every sandbox of
// the image alike; one forge.sh made before the candidate ran and may not
// empty after it is the candidate's doing (only it ran between, as the
// same user). Anything else is infra: "forge.sh: …".
func scriptFailure(report []byte) error {
	for line := range strings.Lines(string(report)) {
		what, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), failedLine+" ")
		switch {
		case !ok:
			continue
		case strings.HasPrefix(what, makeRewardDir) && strings.Contains(what, "Permission denied"):
			return &runner.StepError{Kind: runner.ErrInfra, Lasting: true, Err: fmt.Errorf("the image's user may not %s; "+
				"the sandbox runs as that user, and a fresh sandbox of the image would refuse it too", what)}
		case strings.HasPrefix(what, emptyRewardDir+" ") && strings.Contains(what, "Permission denied"):
			dir, err, _ := strings.Cut(strings.TrimPrefix(what, emptyRewardDir+" "), ": ")
			return &runner.StepError{Kind: runner.ErrCandidateFailed, Err: fmt.Errorf("the candidate left the reward directory %s "+
				"so that forge.sh could not empty it for the verifier (%s)", dir, err)}
		}
		return errors.New("forge.sh: " + what)
	}
	return nil
}

func decodeOutput(encoding, text string) ([]byte, error) {
	text = strings.Join(strings.Fields(text), "")
	switch encoding {
	case "base64":
		return base64.StdEncoding.DecodeString(text)
	case "hex":
		return hex.DecodeString(text)
	}
	return nil, fmt.Errorf("unknown encoding %q", encoding)
}

// doneScanner reads what forge.sh prints, line by line, for its done line.
type doneScanner struct {
	buf  []byte
	from int // where the first line not yet read starts
}

// add takes the next chunk of the log; once the done line is whole, it
// gives what came before it and its status.
func (d *doneScanner) add(chunk string) (text []byte, exit int, ok bool) {
	d.buf = append(d.buf, chunk...)
	for {
		nl := bytes.IndexByte(d.buf[d.from:], '\n')
		if nl < 0 {
			return nil, 0, false
		}
		line := string(d.buf[d.from : d.from+nl])
		if arg, found := strings.CutPrefix(line, doneLine+" "); found {
			if n, err := strconv.Atoi(arg); err == nil && n >= 0 && n <= 255 {
				return d.buf[:d.from], n, true
			}
		}
		d.from += nl + 1
	}
}
