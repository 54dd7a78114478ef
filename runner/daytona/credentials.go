package daytona

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/forge-run/forge/internal/dotenv"
)

// Credentials are what forge needs to reach Daytona. Print them freely:
// String never shows the key.
type Credentials struct {
	APIKey    string
	APIURL    string
	Target    string
	KeySource string // "environment" or the .env file's path; empty without a key
	// Problem explains in one line an unusable key ("DAYTONA_API_KEY is not
	// set", "... is a placeholder") or a .env file that could not be read.
	Problem string
}

// LoadCredentials reads DAYTONA_API_KEY, DAYTONA_API_URL (or
// DAYTONA_BASE_URL) and DAYTONA_TARGET from getenv, else the .env file in
// dotenvDir; a placeholder key ("your_…") counts as unset.
func LoadCredentials(getenv func(string) string, dotenvDir string) Credentials {
	env := dotenv.Load(getenv, dotenvDir)
	get := func(name string) (string, string) {
		v, source, _ := env.Lookup(name, func(v string) bool { return !placeholder(strings.TrimSpace(v)) })
		return strings.TrimSpace(v), source
	}
	var c Credentials
	c.APIKey, c.KeySource = get("DAYTONA_API_KEY")
	if c.APIURL, _ = get("DAYTONA_API_URL"); c.APIURL == "" {
		c.APIURL, _ = get("DAYTONA_BASE_URL")
	}
	c.Target, _ = get("DAYTONA_TARGET")
	if v, _, ok := env.Lookup("DAYTONA_API_KEY", nil); c.APIKey == "" && ok && placeholder(strings.TrimSpace(v)) {
		c.Problem = "DAYTONA_API_KEY is a placeholder"
	} else if c.APIKey == "" {
		c.Problem = "DAYTONA_API_KEY is not set"
	}
	if env.Err != nil {
		c.Problem = strings.TrimPrefix(fmt.Sprintf("%s; cannot read %s: %v", c.Problem, env.Path, env.Err), "; ")
	}
	return c
}

// Usable reports whether there is a key worth trying.
func (c Credentials) Usable() bool { return c.APIKey != "" && !placeholder(c.APIKey) }

// String describes the credentials without the key.
func (c Credentials) String() string {
	url := cmp.Or(c.APIURL, DefaultAPIURL+" (default)")
	key := "no API key"
	if c.Usable() {
		key = "API key set (from " + c.KeySource + ")"
	}
	s := "Daytona " + url + ", " + key
	if c.Target != "" {
		s += ", target " + c.Target
	}
	if c.Problem != "" {
		s += ": " + c.Problem
	}
	return s
}

// placeholder reports a key copied from an example file ("your_api_key").
func placeholder(v string) bool {
	v = strings.ToLower(strings.Trim(v, `"' `))
	return strings.HasPrefix(v, "your_") || strings.HasPrefix(v, "your-") || strings.HasPrefix(v, "<")
}
