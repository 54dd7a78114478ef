package runner

// The verifier: a task's own judge, run in the trial's sandbox after the
// candidate (docs/protocol.md, "Verifier").

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"time"
)

// Verify is a task's verifier. Its files reach the sandbox only once the
// candidate has ended, so the candidate never sees them; its command then
// runs where the candidate started, and writes the reward into the logs
// directory.
type Verify struct {
	// Files go into the tests directory (Dst relative to it).
	Files []File
	// Command is a shell line.
	Command string
	// Timeout bounds the command; zero means DefaultVerifyTimeout.
	Timeout time.Duration
	// Env are the verifier's own variables: it gets neither the
	// candidate's env nor its secrets.
	Env map[string]string
	// User, when set, is who the command runs as in a sandbox made from
	// an image (a Harbor task's [verifier] user); locally jobs run as
	// forge's processes do.
	User string
	// AtRoot puts the files in TestsDir and the reward in VerifierLogsDir,
	// the paths Harbor's tests name, in a sandbox made from an image;
	// otherwise (and always locally) the job has directories of its own.
	AtRoot bool
}

// DefaultVerifyTimeout bounds a verifier that sets no timeout (Harbor's).
const DefaultVerifyTimeout = 10 * time.Minute

// EffectiveTimeout is the verifier's timeout, or the default.
func (v *Verify) EffectiveTimeout() time.Duration { return positiveOr(v.Timeout, DefaultVerifyTimeout) }

// Where a verifier finds its files and leaves its reward in a sandbox made
// from an image: Harbor's paths, which its tests name literally. A local
// job gets directories of its own; the variables name them everywhere.
const (
	TestsDir        = "/tests"
	VerifierLogsDir = "/logs/verifier"
	TestsDirVar     = "FORGE_TESTS_DIR"
	VerifierLogsVar = "FORGE_VERIFIER_LOGS"
)

// The reward files, in the logs directory; reward.txt wins over reward.json.
const (
	RewardText = "reward.txt"
	RewardJSON = "reward.json"
	// MaxRewardBytes caps what is read of a reward file.
	MaxRewardBytes = 64 << 10
)

// VerifyEnv is the verifier's environment besides the backend's basics:
// its own Env, the directories and, in a suite, the task (FORGE_TASK_ID,
// and FORGE_TASK in the tests directory, where the candidate could not
// change it).
func (j Job) VerifyEnv(tests, logs string) map[string]string {
	env := make(map[string]string, len(j.Verify.Env)+4)
	maps.Copy(env, j.Verify.Env)
	env[TestsDirVar] = tests
	env[VerifierLogsVar] = logs
	if j.TaskID != "" {
		env["FORGE_TASK_ID"] = j.TaskID
		env["FORGE_TASK"] = tests + "/" + TaskFile
	}
	return env
}

// VerifyFiles are the files of the tests directory: the verifier's, and
// the task's.
func (j Job) VerifyFiles() []File {
	files := j.Verify.Files[:len(j.Verify.Files):len(j.Verify.Files)]
	for _, f := range j.Files {
		if f.Dst == TaskFile {
			files = append(files, f)
		}
	}
	return files
}

// VerifiesAfter reports whether a verifier runs after a job that ended with
// k: after whatever the candidate did (the sandbox is what it left), not
// after the backend failed or the run was cancelled.
func VerifiesAfter(k ErrorKind) bool { return k.Scored() }

// VerifyOutcome is what a backend observed of a verifier.
type VerifyOutcome struct {
	// ExitCode is nil when a signal ended it or it timed out.
	ExitCode *int
	TimedOut bool
	// Log is its stdout and stderr as they came, capped; LogBytes is the
	// whole log's size.
	Log      []byte
	LogBytes int64
	// Text and JSON are the reward files' contents, nil when missing;
	// Problem says why one that exists could not be read.
	Text, JSON []byte
	Problem    string
	// LogsDir is where the reward was looked for, for the message.
	LogsDir string
}

// Verified records what the verifier said of the trial: its reward and
// metrics, or verify_failed with the cause. A candidate's own failure stays
// when the reward was read (the reward still scores it).
func (r *Result) Verified(v *Verify, o VerifyOutcome) {
	r.VerifierLog = o.Log
	r.VerifierOutput = string(o.Log)
	r.VerifierLogBytes = max(o.LogBytes, int64(len(o.Log)))
	reward, metrics, err := ParseReward(o.Text, o.JSON)
	switch {
	case o.TimedOut:
		err = fmt.Errorf("the verifier ran past its timeout of %s", v.EffectiveTimeout())
	case o.Problem != "":
		err = fmt.Errorf("the verifier's reward %s", o.Problem)
	case err != nil && o.Text == nil && o.JSON == nil:
		why := "exit status none (killed by a signal)"
		if o.ExitCode != nil {
			why = "exit status " + strconv.Itoa(*o.ExitCode)
		}
		if last := LastErrorLine(string(o.Log)); last != "" {
			why += ": " + last
		}
		err = fmt.Errorf("the verifier wrote no reward (%s or %s in %s; %s)", RewardText, RewardJSON, cmp.Or(o.LogsDir, VerifierLogsDir), why)
	}
	if err != nil {
		msg := err.Error()
		if r.ErrorKind != ErrNone {
			msg += "; the candidate: " + r.ErrorMessage
		}
		r.Failed(ErrVerifyFailed, msg)
		return
	}
	r.Reward, r.Metrics = &reward, metrics
}

// ParseReward reads a verifier's reward: reward.txt's one number, else
// reward.json's object with a "reward" number, whose other numbers are
// metrics. Every other content is an error naming the file.
func ParseReward(text, js []byte) (reward float64, metrics map[string]float64, err error) {
	if text != nil {
		s := strings.TrimSpace(string(text))
		if s == "" {
			return 0, nil, fmt.Errorf("%s is empty", RewardText)
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, nil, fmt.Errorf("%s holds %s, not a number", RewardText, quoteStart(s))
		}
		return f, nil, nil
	}
	if js == nil {
		return 0, nil, fmt.Errorf("no %s or %s", RewardText, RewardJSON)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil || dec.More() {
		return 0, nil, fmt.Errorf("%s is not a JSON object: %s", RewardJSON, quoteStart(string(js)))
	}
	raw, ok := m["reward"]
	if !ok {
		return 0, nil, fmt.Errorf("%s has no \"reward\"", RewardJSON)
	}
	if reward, ok = number(raw); !ok {
		return 0, nil, fmt.Errorf("%s: \"reward\" is %s, not a number", RewardJSON, quoteStart(fmt.Sprint(raw)))
	}
	for k, v := range m {
		if f, ok := number(v); ok && k != "reward" {
			if metrics == nil {
				metrics = map[string]float64{}
			}
			metrics[k] = f
		}
	}
	return reward, metrics, nil
}

// quoteStart quotes the start of s for an error message.
func quoteStart(s string) string {
	if len(s) > 40 {
		s = strings.ToValidUTF8(s[:40], "") + "…"
	}
	return strconv.Quote(s)
}
