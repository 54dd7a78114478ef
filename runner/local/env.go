package local

// A job's processes' environment: exactly what the package doc lists, and
// nothing else of forge's.

import (
	"cmp"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/forge-run/forge/runner"
)

// env is the candidate's whole environment (and, without its secrets
// unless the manifest says setup_secrets, the setup commands'): a few
// basics from forge, then the manifest's env, the secrets and the FORGE_*
// variables; in an environment, its bin/ first on PATH and FORGE_ENV_DIR.
func (j *jobRun) env(secrets bool) []string {
	getenv := j.r.opts.Getenv
	m := map[string]string{
		"PATH":             cmp.Or(getenv("PATH"), defaultPath),
		"HOME":             j.workdir,
		"LANG":             cmp.Or(getenv("LANG"), "C.UTF-8"),
		"TMPDIR":           filepath.Join(j.workdir, "tmp"),
		"PYTHONUNBUFFERED": "1",
	}
	for k, v := range j.job.ProtocolEnv(func(rel string) string { return filepath.Join(j.workdir, filepath.FromSlash(rel)) }) {
		m[k] = v
	}
	if secrets {
		maps.Copy(m, j.job.Secrets) // their names are never FORGE_*
	}
	if j.envDir != "" {
		inEnvironment(m, j.envDir)
	}
	return runner.EnvList(m)
}

// plainEnv is a plain job's whole environment (runner.Job.Dir): the job's
// Env and Secrets, forge's PATH, HOME, LANG and TMPDIR, and the FORGE_* variables that
// name the job (the marker among them); no FORGE_OUTPUT or FORGE_RESULT, no
// PYTHONUNBUFFERED. In an environment, also its bin/ first on PATH and
// FORGE_ENV_DIR.
func (j *jobRun) plainEnv() []string {
	getenv := j.r.opts.Getenv
	m := make(map[string]string, len(j.job.Env)+8)
	maps.Copy(m, j.job.Env)
	maps.Copy(m, j.job.Secrets) // a judge's own (scoring's secrets:)
	m["PATH"] = cmp.Or(getenv("PATH"), defaultPath)
	if home := getenv("HOME"); home != "" {
		m["HOME"] = home
	}
	m["LANG"] = cmp.Or(getenv("LANG"), "C.UTF-8")
	m["TMPDIR"] = cmp.Or(getenv("TMPDIR"), os.TempDir())
	protocol := j.job.ProtocolEnv(func(string) string { return "" })
	for _, k := range []string{"FORGE_OBJECTIVE", "FORGE_CANDIDATE_ID", "FORGE_TRIAL", "FORGE_RUN_ID", "FORGE_TASK_ID"} {
		if v, ok := protocol[k]; ok {
			m[k] = v
		}
	}
	if j.envDir != "" {
		inEnvironment(m, j.envDir)
	}
	return runner.EnvList(m)
}

// marker are the environment entries that identify the job's processes.
func marker(job runner.Job) []string {
	env := job.ProtocolEnv(func(string) string { return "" })
	m := []string{
		"FORGE_RUN_ID=" + env["FORGE_RUN_ID"],
		"FORGE_CANDIDATE_ID=" + env["FORGE_CANDIDATE_ID"],
		"FORGE_TRIAL=" + env["FORGE_TRIAL"],
	}
	if job.TaskID != "" {
		m = append(m, "FORGE_TASK_ID="+job.TaskID)
	}
	return m
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}
