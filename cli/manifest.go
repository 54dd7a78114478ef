package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"gopkg.in/yaml.v3"

	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/runner/daytona"
	"github.com/joho/godotenv"
)

// backendBlocks are the manifest's top-level blocks that belong to a
// backend, each decoded and checked by its backend (forge knows none of
// them): a backend with a block of its own adds it here.
var backendBlocks = []forge.Block{
	{Name: "daytona", Decode: func(n *yaml.Node, path string) (any, []error) { return daytona.DecodeSpec(n, path) }},
}

// loadManifest loads and checks the manifest at path, the backends' blocks
// included (a bad daytona: block is an error without --daytona too).
func loadManifest(path string) (*forge.Manifest, error) {
	return forge.Load(path, backendBlocks...)
}

// lookup finds the variables a manifest passes on purpose (secrets:,
// env_from_host:) in forge's environment, then in the .env beside the
// manifest (read without touching the environment). A .env that exists but
// cannot be read is an error.
func lookup(env *Env, m *forge.Manifest) (forge.Lookup, error) {
	file, err := godotenv.Read(filepath.Join(m.Dir, ".env"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", filepath.Join(m.Dir, ".env"), err)
	}
	return func(name string) (string, bool) {
		if v := env.Getenv(name); v != "" {
			return v, true
		}
		v, ok := file[name]
		return v, ok && v != ""
	}, nil
}
