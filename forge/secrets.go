package forge

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/forge-run/forge/runner"
)

// refPattern is the one expansion env: values know: ${NAME}.
var refPattern = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// checkName says what is wrong with k as a secret's or a host variable's
// name: the rules of any variable a job gets, and never forge's own
// DAYTONA_* (its API key and settings).
func checkName(k string) error {
	if strings.HasPrefix(strings.ToUpper(k), "DAYTONA_") {
		return fmt.Errorf("%q: DAYTONA_* variables are forge's own (its API key and settings) and are never passed to candidates", k)
	}
	return runner.CheckEnvName(k)
}

// checkNames tells bad, at its index below path, each of names that a
// secret or host variable may not have (checkName).
func checkNames(bad func(msg string, path ...any), names []string, path ...any) {
	for i, k := range names {
		if err := checkName(k); err != nil {
			bad(err.Error(), append(path, i)...)
		}
	}
}

// check validates p's names, env's (at the env: below path) and the
// ${NAME} references of env, which may use p's names and those of outer
// (the defaults', for a candidate or a task).
func (p Passing) check(v *validator, env map[string]string, outer Passing, path ...any) {
	checkEnv(v.at, env, append(path, "env")...)
	checkNames(v.at, p.Secrets, append(path, "secrets")...)
	checkNames(v.at, p.EnvFromHost, append(path, "env_from_host")...)
	known := append(p.names(), outer.names()...)
	eachRef(env, refPattern, func(k, name string) {
		if !slices.Contains(known, name) {
			v.at(fmt.Sprintf("${%s} is neither a secret nor an env_from_host variable here: declare it under secrets: or env_from_host:", name),
				append(path, "env", k)...)
		}
	})
}

// names are the secrets' and host variables' names.
func (p Passing) names() []string { return append(slices.Clone(p.Secrets), p.EnvFromHost...) }

// Lookup finds a variable of forge's environment (or of the .env beside the
// manifest) by name.
type Lookup func(name string) (string, bool)

// passed is what one job is given on purpose: its secrets (with the env:
// entries that use one, which are as secret) and its plain env, expanded.
type passed struct {
	secrets, env map[string]string
	missing      []string
}

// pass resolves the variables of the job's layers (defaults, candidate,
// task) with look and expands env's references. A secret look cannot find
// is missing, and so is an unset host variable that env uses.
func pass(look Lookup, env map[string]string, layers ...Passing) passed {
	out := passed{secrets: map[string]string{}, env: map[string]string{}}
	values := map[string]string{}
	secret := map[string]bool{}
	for _, l := range layers {
		for _, k := range l.Secrets {
			secret[k] = true
		}
		for _, k := range l.names() {
			if _, done := values[k]; done || slices.Contains(out.missing, k) {
				continue
			}
			val, ok := look(k)
			if !ok {
				if secret[k] {
					out.missing = append(out.missing, k)
				}
				continue
			}
			values[k] = val
		}
	}
	for k, val := range values {
		if secret[k] {
			out.secrets[k] = val
		} else {
			out.env[k] = val
		}
	}
	for k, val := range env {
		usesSecret, missing := false, false
		expanded := refPattern.ReplaceAllStringFunc(val, func(ref string) string {
			name := ref[2 : len(ref)-1]
			v, ok := values[name]
			if !ok && !slices.Contains(out.missing, name) {
				out.missing = append(out.missing, name)
			}
			missing = missing || !ok
			usesSecret = usesSecret || secret[name]
			return v
		})
		switch {
		case missing:
		case usesSecret:
			out.secrets[k] = expanded
			delete(out.env, k)
		default:
			out.env[k] = expanded
		}
	}
	slices.Sort(out.missing)
	return out
}

// MissingSecretsError is a plan that needs variables forge's environment
// (and the .env beside the manifest) does not have: by variable, the
// candidates (or tasks) that need it.
type MissingSecretsError struct {
	Missing map[string][]string
	Dir     string
}

func (e *MissingSecretsError) Error() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(e.Missing)) {
		parts = append(parts, fmt.Sprintf("%s (needed by %s)", k, strings.Join(e.Missing[k], ", ")))
	}
	return fmt.Sprintf("not set in forge's environment nor in %s/.env: %s", e.Dir, strings.Join(parts, "; "))
}

// taskMayNotTake says why no task may take the variable name, or "" when it
// may: forge's own DAYTONA_* and FORGE_*, and the candidates' secrets,
// which a task would hand to every candidate that plays it and to its
// verifier. It is the one rule of what a task takes (checkTaskTakes).
func (m *Manifest) taskMayNotTake(name string) string {
	const reach = ", and what a task takes reaches every candidate that plays it and its verifier"
	switch up := strings.ToUpper(name); {
	case strings.HasPrefix(up, "DAYTONA_"):
		return "DAYTONA_* variables are forge's own (its API key and settings)"
	case strings.HasPrefix(up, "FORGE_"):
		return "FORGE_* variables are forge's own"
	case slices.Contains(m.Defaults.Secrets, name):
		return "it is the candidates' secret (defaults.secrets)" + reach
	}
	for _, c := range m.Candidates {
		if slices.Contains(c.Secrets, name) {
			return "it is candidate " + c.ID + "'s secret" + reach
		}
	}
	return ""
}

// checkTaskTakes reports, at its key, every variable t would take that
// taskMayNotTake refuses: those of its secrets: and env_from_host:, the
// defaults' its env's ${NAME}s use (an undeclared one is decode's to
// refuse), and a Harbor task's host variables, "${NAME}" in its verifier's
// and solution's env (fromHost).
func (m *Manifest) checkTaskTakes(t *Task, bad func(msg string, path ...any)) {
	refuse := func(key, what, name string) {
		if why := m.taskMayNotTake(name); why != "" {
			bad(fmt.Sprintf("%s: task %s may not take %s: %s", what, t.ID, name, why), key)
		}
	}
	for _, name := range t.Secrets {
		refuse("secrets", strconv.Quote(name), name)
	}
	for _, name := range t.EnvFromHost {
		refuse("env_from_host", strconv.Quote(name), name)
	}
	own, outer := t.names(), m.Defaults.names()
	eachRef(t.Env, refPattern, func(k, name string) {
		if !slices.Contains(own, name) && slices.Contains(outer, name) {
			refuse("env", k+": ${"+name+"}", name)
		}
	})
	if !t.harbor() {
		return
	}
	for _, env := range []struct {
		key  string
		vars map[string]string
	}{{"verifier.env", t.Verify.Env}, {"solution.env", t.solutionEnv}} {
		eachRef(env.vars, hostTemplate, func(k, name string) { refuse(env.key, fmt.Sprintf("%s = %q", k, env.vars[k]), name) })
	}
}

// eachRef calls f, in key order, for each variable re finds (its first
// group) in env's values.
func eachRef(env map[string]string, re *regexp.Regexp, f func(k, name string)) {
	for _, k := range slices.Sorted(maps.Keys(env)) {
		for _, m := range re.FindAllStringSubmatch(env[k], -1) {
			f(k, m[1])
		}
	}
}
