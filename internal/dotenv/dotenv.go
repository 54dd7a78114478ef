// Package dotenv is forge's one rule for a variable the user names (the
// Daytona credentials, secrets:, env_from_host:): forge's environment first,
// then the .env beside the manifest, read without touching the environment.
// A blank value counts as unset.
package dotenv

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/joho/godotenv"
)

// Source is where Lookup found a value in forge's own environment.
const Source = "environment"

// Env is forge's environment with a .env file behind it.
type Env struct {
	getenv func(string) string
	file   map[string]string
	// Path is the .env file's path (it may not exist).
	Path string
	// Err is why an existing .env could not be read; lookups then skip it.
	Err error
}

// Load reads the .env file in dir, if any, behind getenv.
func Load(getenv func(string) string, dir string) *Env {
	e := &Env{getenv: getenv}
	if dir == "" {
		return e
	}
	e.Path = filepath.Join(dir, ".env")
	file, err := godotenv.Read(e.Path)
	switch {
	case err == nil:
		e.file = file
	case !errors.Is(err, fs.ErrNotExist):
		e.Err = err
	}
	return e
}

// Lookup returns name's value and where it was found: the first non-blank one
// that usable (if set) accepts.
func (e *Env) Lookup(name string, usable func(string) bool) (value, source string, ok bool) {
	for _, c := range [2]struct{ value, source string }{{e.getenv(name), Source}, {e.file[name], e.Path}} {
		if strings.TrimSpace(c.value) != "" && (usable == nil || usable(c.value)) {
			return c.value, c.source, true
		}
	}
	return "", "", false
}
