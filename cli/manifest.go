package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"gopkg.in/yaml.v3"

	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/internal/dotenv"
	"github.com/forge-run/forge/runner/daytona"
	"github.com/forge-run/forge/runner/local"
)

// backendBlocks are the manifest's top-level blocks that belong to a
// backend, each decoded and checked by its backend (forge knows none of
// them): a backend with a block of its own adds it here.
var backendBlocks = []forge.Block{
	{Name: "daytona", Decode: func(n *yaml.Node, path string) (any, []error) { return daytona.DecodeSpec(n, path) }},
	{Name: "local", Decode: func(n *yaml.Node, path string) (any, []error) { return local.DecodeSpec(n, path) }},
}

// loadManifest loads and checks the manifest at path, the backends' blocks
// included (a bad daytona: block is an error without --daytona too).
func loadManifest(path string) (*forge.Manifest, error) {
	return forge.Load(path, backendBlocks...)
}

// loadSuite is loadManifest with a directory of Harbor tasks (--harbor)
// over the manifest's harbor:. With agents (--agent) and no manifest at
// path, the tasks and the agents are the whole tournament.
func loadSuite(path, harbor string, agents []forge.AgentChoice) (*forge.Manifest, error) {
	if harbor == "" {
		return loadManifest(path)
	}
	if _, err := os.Stat(harbor); errors.Is(err, fs.ErrNotExist) {
		return nil, flagError{fmt.Errorf("--harbor %s: no such directory (want a Harbor task directory, or a directory of them)", harbor)}
	} else if err != nil {
		return nil, flagError{fmt.Errorf("--harbor %s: %w", harbor, err)}
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) && len(agents) > 0 {
		return forge.LoadAgentsOnHarbor(path, harbor, agents, backendBlocks...)
	}
	return forge.LoadHarbor(path, harbor, backendBlocks...)
}

// lookup finds the variables a manifest passes on purpose by
// internal/dotenv's rule: forge's environment, then the .env beside it.
func lookup(env *Env, m *forge.Manifest) (forge.Lookup, error) {
	e := dotenv.Load(env.Getenv, m.Dir)
	if e.Err != nil {
		return nil, fmt.Errorf("%s: %w", e.Path, e.Err)
	}
	return func(name string) (string, bool) {
		v, _, ok := e.Lookup(name, nil)
		return v, ok
	}, nil
}
