package daytona

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/joho/godotenv"
)

// Credentials are what forge needs to reach Daytona. Print them freely:
// String never shows the key.
type Credentials struct {
	APIKey string
	APIURL string
	Target string
	// KeySource says where the key came from: "environment" or the .env
	// file's path; empty when there is no key.
	KeySource string
	// Problem explains an unusable key in one line ("DAYTONA_API_KEY is
	// not set", "... is a placeholder"), or a .env file that could not be
	// read.
	Problem string
}

// LoadCredentials reads DAYTONA_API_KEY, DAYTONA_API_URL (or the original
// tool's DAYTONA_BASE_URL) and DAYTONA_TARGET from getenv and from the .env
// file in dotenvDir (read without touching the process environment). A value
// from the real environment wins; a placeholder key ("your_…") counts as
// unset.
func LoadCredentials(getenv func(string) string, dotenvDir string) Credentials {
	var file map[string]string
	var fileProblem string
	envPath := ""
	if dotenvDir != "" {
		envPath = filepath.Join(dotenvDir, ".env")
		m, err := godotenv.Read(envPath)
		switch {
		case err == nil:
			file = m
		case errors.Is(err, fs.ErrNotExist):
		default:
			fileProblem = fmt.Sprintf("cannot read %s: %v", envPath, err)
		}
	}
	get := func(name string) (string, string) {
		if v := strings.TrimSpace(getenv(name)); v != "" && !placeholder(v) {
			return v, "environment"
		}
		if v := strings.TrimSpace(file[name]); v != "" && !placeholder(v) {
			return v, envPath
		}
		return "", ""
	}
	var c Credentials
	c.APIKey, c.KeySource = get("DAYTONA_API_KEY")
	if c.APIURL, _ = get("DAYTONA_API_URL"); c.APIURL == "" {
		c.APIURL, _ = get("DAYTONA_BASE_URL")
	}
	c.Target, _ = get("DAYTONA_TARGET")
	switch {
	case c.APIKey != "":
	case placeholder(strings.TrimSpace(getenv("DAYTONA_API_KEY"))) || placeholder(strings.TrimSpace(file["DAYTONA_API_KEY"])):
		c.Problem = "DAYTONA_API_KEY is a placeholder"
	default:
		c.Problem = "DAYTONA_API_KEY is not set"
	}
	if fileProblem != "" {
		c.Problem = strings.TrimPrefix(c.Problem+"; "+fileProblem, "; ")
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
