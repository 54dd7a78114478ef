package forge

import (
	"errors"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forge-run/forge/record"
)

func lookupOf(vars map[string]string) Lookup {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// TestSecretsArePassedOnPurpose: named secrets and host variables reach
// their candidate's job, under their own name; env: may use ${NAME} of
// them, and an entry that uses a secret is a secret itself.
func TestSecretsArePassedOnPurpose(t *testing.T) {
	m, err := loadSuite(t, `objective: o
defaults:
  env_from_host: [GATEWAY]
  env: {BASE_URL: "${GATEWAY}/v1", PLAIN: "$HOME and ${ not a ref"}
candidates:
  - id: a
    script: a.py
    secrets: [OPENAI_API_KEY]
    env: {AUTH: "Bearer ${OPENAI_API_KEY}"}
  - id: b
    script: b.py
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"OPENAI_API_KEY": "sk-test-123456", "GATEWAY": "http://gw", "OTHER": "never"}
	p, err := m.Plan(Overrides{Lookup: lookupOf(vars)})
	if err != nil {
		t.Fatal(err)
	}
	a, b := p.Jobs[0], p.Jobs[1]
	wantEnv := map[string]string{"GATEWAY": "http://gw", "BASE_URL": "http://gw/v1", "PLAIN": "$HOME and ${ not a ref"}
	if !maps.Equal(a.Env, wantEnv) || !maps.Equal(b.Env, wantEnv) {
		t.Errorf("env a %v\nb %v\nwant %v", a.Env, b.Env, wantEnv)
	}
	if want := map[string]string{"OPENAI_API_KEY": "sk-test-123456", "AUTH": "Bearer sk-test-123456"}; !maps.Equal(a.Secrets, want) {
		t.Errorf("a's secrets = %v, want %v", a.Secrets, want)
	}
	if len(b.Secrets) != 0 {
		t.Errorf("b got secrets it did not ask for: %v", b.Secrets)
	}
	if got := p.SecretValues(); strings.Join(got, "|") != "Bearer sk-test-123456|sk-test-123456" {
		t.Errorf("secret values = %q", got)
	}
}

func TestMissingSecrets(t *testing.T) {
	m, err := loadSuite(t, `objective: o
candidates:
  - {id: a, script: a.py, secrets: [OPENAI_API_KEY]}
  - {id: b, script: b.py}
  - {id: c, script: c.py, secrets: [OPENAI_API_KEY, ANTHROPIC_API_KEY]}
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Plan(Overrides{Lookup: lookupOf(nil)})
	var ms *MissingSecretsError
	if !errors.As(err, &ms) || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY (needed by c); OPENAI_API_KEY (needed by a, c)") ||
		!strings.Contains(err.Error(), filepath.Join(m.Dir, ".env")) {
		t.Fatalf("err = %v", err)
	}
	p, err := m.Plan(Overrides{Lookup: lookupOf(map[string]string{"ANTHROPIC_API_KEY": "x"}), AllowMissingSecrets: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(p.Candidates, ",") != "b" || len(p.Jobs) != 1 || len(p.NotRun) != 2 ||
		p.NotRun[0] != (record.NotRun{CandidateID: "a", Reason: "not set: OPENAI_API_KEY"}) {
		t.Errorf("candidates %v, not run %+v", p.Candidates, p.NotRun)
	}
}

func TestSecretNamesAreChecked(t *testing.T) {
	for _, c := range []struct{ name, manifest, want string }{
		{"daytona key", "objective: o\ncandidates:\n  - {id: a, script: a.py, secrets: [DAYTONA_API_KEY]}\n",
			`candidates[0].secrets[0]: "DAYTONA_API_KEY": DAYTONA_* variables are forge's own`},
		{"daytona host var", "objective: o\ndefaults: {env_from_host: [daytona_api_url]}\ncandidates:\n  - {id: a, script: a.py}\n",
			`defaults.env_from_host[0]: "daytona_api_url": DAYTONA_* variables are forge's own`},
		{"forge var", "objective: o\ncandidates:\n  - {id: a, script: a.py, secrets: [FORGE_OUTPUT]}\n",
			`candidates[0].secrets[0]: "FORGE_OUTPUT": FORGE_* variables are set by forge itself`},
		{"undeclared ref", "objective: o\ncandidates:\n  - {id: a, script: a.py, env: {X: \"${HOME}\"}}\n",
			`candidates[0].env.X: ${HOME} is neither a secret nor an env_from_host variable here`},
		{"another candidate's secret", "objective: o\ncandidates:\n  - {id: a, script: a.py, secrets: [K]}\n  - {id: b, script: b.py, env: {X: \"${K}\"}}\n",
			`candidates[1].env.X: ${K} is neither`},
		{"task ref", "objective: o\ncandidates:\n  - {id: a, script: a.py}\ntasks:\n  - {id: t1, env: {X: \"${K}\"}}\n",
			`tasks[0].env.X: ${K} is neither`},
		{"task daytona", "objective: o\ncandidates:\n  - {id: a, script: a.py}\ntasks:\n  - {id: t1, secrets: [DAYTONA_API_KEY]}\n",
			`tasks[0].secrets[0]: "DAYTONA_API_KEY": DAYTONA_* variables are forge's own`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := loadSuite(t, c.manifest, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v\nwant %q", err, c.want)
			}
		})
	}
}

// TestTaskSecretMissingFailsEvenAllowed: a suite cannot leave a task out.
func TestTaskSecretMissingFailsEvenAllowed(t *testing.T) {
	m, err := loadSuite(t, "objective: o\ncandidates:\n  - {id: a, script: a.py}\ntasks:\n  - {id: t1, secrets: [K]}\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Plan(Overrides{AllowMissingSecrets: true}); err == nil || !strings.Contains(err.Error(), "K (needed by task t1)") {
		t.Errorf("err = %v", err)
	}
	p, err := m.Plan(Overrides{Lookup: lookupOf(map[string]string{"K": "value-of-k"})})
	if err != nil || p.Jobs[0].Secrets["K"] != "value-of-k" {
		t.Errorf("plan %+v, err %v", p, err)
	}
}
