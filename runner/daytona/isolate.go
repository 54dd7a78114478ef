package daytona

// The verifier starts clean (docs/protocol.md, "What the verifier can
// trust"): what the candidate left running cannot write the reward forge
// reads. forge.sh's verify mode empties the reward directory, then gives
// the verifier one of its own:
//
//  1. where the sandbox allows a mount namespace (root, or passwordless
//     sudo, and unshare(1)), the verifier runs in one of its own, private,
//     where the reward directory is a fresh tmpfs no other process sees;
//     the reward is read there, once the verifier has ended, and printed
//     on forge.sh's log. What the candidate left keeps running (a service
//     it was asked to leave is still there to test), but what it writes
//     to the reward directory lands in the outer one, which forge ignores;
//  2. elsewhere, forge.sh ends every process the candidate left: those
//     found in /proc that were not running as it started (forge.sh "run"
//     printed them, forge hands them back), but for forge.sh's ancestors
//     and what its parent runs for it; then the verifier runs, and the
//     reward is read from the reward directory. Something that cannot be
//     ended, or a sandbox whose processes forge cannot tell apart (no PID
//     namespace of its own, nothing known of what ran before), fails the
//     step: the trial is infra, never judged.

import (
	"fmt"
	"strings"

	"github.com/forge-run/forge/runner"
)

// procsLine is what forge.sh "run" prints before the candidate starts, with
// a verifier: "forge-procs PID:START..." for every process then running
// (START: its start time, so that a PID used again is told apart).
const procsLine = "forge-procs"

// procsText is forge_stat and forge_procs, in builtins only.
// forge_stat PID sets forge_state, forge_ppid and forge_start (fields 3, 4
// and 22 of its stat; the name, in parentheses, may hold spaces); false
// when it is gone. forge_procs prints procsLine.
const procsText = `forge_stat() {
  read -r forge_s 2>/dev/null <"/proc/$1/stat" || return 1
  forge_s=${forge_s##*) }
  set -f; set -- $forge_s; set +f
  forge_state=$1 forge_ppid=$2 forge_start=${20}
}
forge_procs() {
  printf '` + procsLine + `'
  for forge_p in /proc/[0-9]*; do
    forge_p=${forge_p#/proc/}
    forge_stat "$forge_p" && printf ' %s:%s' "$forge_p" "$forge_start"
  done
  echo
}
`

// parseProcs reads the procsLine of forge.sh's output: the PID:START
// fields; nil without one.
func parseProcs(text []byte) []string {
	for line := range strings.Lines(string(text)) {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == procsLine {
			return f[1:] // not nil, even when empty
		}
	}
	return nil
}

// verifyMode is forge.sh's verify mode, given the PID:START of the
// processes running as the candidate started (procsLine) as arguments:
// the tools, then forge_verify once (claimText), whose report the
// verifier's log completes. The reward is printed by forge_verify alone:
// a later start, or collect, finds none.
func verifyMode(checkTools string) string {
	return `verify)
  shift
  ` + checkTools + `  if forge_claim verify; then
    forge_verify "$@"
    echo "$forge_rc -1 ok" >"$forge_ctl.verify.done"
  else
    forge_fail "the verifier ran in an earlier start of forge.sh, whose report was lost"
  fi
  forge_want=verifier; forge_end ;;
`
}

// isolateText defines forge_verify PID:START...: it empties the reward
// directory, runs the verifier (verify, its script) with its log in
// <ctl>.verify.log and prints its reward files (forge_files), in a mount
// namespace of its own where it can (forge_private), else once the
// candidate's processes have ended (forge_endagent). forge_rc is the
// verifier's status.
func (l layout) isolateText(verify string) string {
	logs, log := shQuote(l.logs), shQuote(l.ctl+".verify.log")
	rewards := "forge_want='reward rewardjson'\n" + encodingText + fmt.Sprintf("forge_files reward %[1]s/%[2]s %[3]d rewardjson %[1]s/%[4]s %[3]d\n",
		logs, runner.RewardText, runner.MaxRewardBytes, runner.RewardJSON)
	// The namespace's own script, as root: the tmpfs (the verifier's user
	// its owner), the verifier as that user ($1, $2: forge.sh's effective
	// uid and gid, from /proc, without forking id), its reward.
	inner := filesText + fmt.Sprintf(`if ! forge_err=$(mount -t tmpfs -o mode=0755,uid="$1",gid="$2" forge-verifier %[1]s 2>&1); then
  printf '%[2]s %%s\n%[3]s 125\n.\n' "mount a private reward directory on "%[1]s": $(printf %%s "$forge_err" | tr '\n' ' ')"
  exit 125
fi
if [ "$1" = 0 ]; then sh -c %[4]s >%[5]s 2>&1
else setpriv --reuid="$1" --regid="$2" --init-groups sh -c %[4]s >%[5]s 2>&1
fi
forge_rc=$?
%[6]sexit $forge_rc
`, logs, failedLine, doneLine, shQuote(verify), log, rewards)
	return procsText + fmt.Sprintf(`forge_asroot() {
  if [ "$forge_uid" = 0 ]; then "$@"; else sudo -n -E env "PATH=$PATH" "$@"; fi
}
forge_private() {
  command -v unshare >/dev/null 2>&1 || return 1
  while read -r forge_k forge_r forge_e forge_x; do
    case $forge_k in Uid:) forge_uid=$forge_e ;; Gid:) forge_gid=$forge_e ;; esac
  done </proc/self/status
  if [ "$forge_uid" != 0 ]; then
    command -v setpriv >/dev/null 2>&1 && command -v sudo >/dev/null 2>&1 || return 1
    sudo -n true >/dev/null 2>&1 || return 1
  fi
  forge_asroot unshare -m --propagation private mount -t tmpfs forge-probe %[1]s >/dev/null 2>&1 || return 1
  forge_asroot unshare -m --propagation private sh -c %[2]s forge-verifier "$forge_uid" "$forge_gid"
  forge_rc=$?
}
%[3]sforge_verify() {
  rm -rf %[1]s 2>/dev/null; mkdir -p %[1]s 2>/dev/null
  forge_private && return
  forge_endagent "$@"
  forge_err=$( { LC_ALL=C rm -rf %[1]s && mkdir -p %[1]s; } 2>&1) || forge_fail "%[7]s "%[1]s": $forge_err"
  sh -c %[4]s >%[5]s 2>&1
  forge_rc=$?
%[6]s}
`, logs, shQuote(inner), endAgentText, shQuote(verify), log, rewards, emptyRewardDir)
}

// What forge.sh says it could not do with the reward directory (its
// failedLine, scriptFailure): make it before the candidate runs (the image's
// user may not), or empty it after (the candidate's doing: it ran between).
const (
	makeRewardDir  = "make the reward directory"
	emptyRewardDir = "empty the reward directory"
)

// rewardDirText has forge.sh make the reward directory before anything of
// the candidate's runs: one the image's user may not make fails every
// sandbox of the image, and is told apart from one the candidate spoiled
// (mkdir's message in the C locale, which scriptFailure reads).
func (l layout) rewardDirText() string {
	return fmt.Sprintf("forge_err=$(LC_ALL=C mkdir -p %[1]s 2>&1) || forge_fail \"%[2]s \"%[1]s\": $forge_err\"\n", shQuote(l.logs), makeRewardDir)
}

// endAgentText is forge_endagent PID:START...: it kills (SIGKILL, pass
// after pass, for a while) every process of the sandbox's PID namespace
// not among those, but for forge.sh, its ancestors and what its parent
// (not the namespace's init, which adopts orphans) runs; it fails the
// step when something is left, or when this is no PID namespace of the
// sandbox's own (the kernel's kthreadd is PID 2: forge.sh runs on a host,
// where nothing is the candidate's alone) or nothing is known of what ran
// before.
const endAgentText = `forge_endagent() {
  forge_k=
  read -r forge_k 2>/dev/null </proc/2/comm
  if [ "$forge_k" = kthreadd ] && forge_stat 2 && [ "$forge_ppid" = 0 ]; then
    forge_fail "isolate the verifier: no mount namespace of its own here (unshare -m as root), and forge.sh sees the kernel's threads: it runs in no PID namespace of the sandbox's own, where what the candidate left could be told apart"
  fi
  [ $# -gt 0 ] || forge_fail "isolate the verifier: no mount namespace of its own here (unshare -m as root), and the processes running before the candidate are unknown"
  forge_before=" $* " forge_keep=" " forge_p=$$ forge_n=0
  while [ "$forge_p" -gt 0 ] 2>/dev/null && [ $forge_n -lt 64 ] && forge_stat "$forge_p"; do
    forge_keep="$forge_keep$forge_p " forge_p=$forge_ppid forge_n=$((forge_n + 1))
  done
  forge_stat $$ && forge_parent=$forge_ppid
  [ "$forge_parent" -gt 1 ] 2>/dev/null || forge_parent=$$
  for forge_pass in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30; do
    forge_left=
    for forge_p in /proc/[0-9]*; do
      forge_p=${forge_p#/proc/}
      forge_stat "$forge_p" || continue
      case $forge_state in Z|X|x) continue ;; esac
      case "$forge_before$forge_keep" in *" $forge_p:$forge_start "*|*" $forge_p "*) continue ;; esac
      forge_q=$forge_ppid forge_n=0
      while [ "$forge_q" -gt 1 ] 2>/dev/null && [ "$forge_q" != "$forge_parent" ] && [ "$forge_q" != $$ ] && [ $forge_n -lt 64 ] && forge_stat "$forge_q"; do
        forge_q=$forge_ppid forge_n=$((forge_n + 1))
      done
      case $forge_q in "$forge_parent"|$$) continue ;; esac
      kill -9 "$forge_p" 2>/dev/null
      forge_left="$forge_left $forge_p"
    done
    [ -z "$forge_left" ] && return 0
    sleep 0.1 2>/dev/null || sleep 1
  done
  forge_fail "isolate the verifier: could not end what the candidate left running (process$forge_left)"
}
`
