package runner

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Environment is built once and reused by every job naming the same one, in
// this run and the next: an image (Daytona) and build steps that fill the
// directory EnvDirVar names, with files and variables. Its identity is Hash,
// never its Name.
type Environment struct {
	// Name is the manifest's name for it, for people.
	Name string
	// Hash identifies the environment (EnvironmentHash): lowercase hex.
	Hash string
	// Image is the Daytona snapshot's base (empty: DefaultImage); locally
	// only part of the identity.
	Image string
	// Build are shell lines run in order in the environment's directory.
	Build []string
	// Files are written into the environment's directory before the build.
	Files []File
	// Env are the build's variables, not the jobs'.
	Env map[string]string
	// BuildTimeout bounds the whole build; zero means DefaultBuildTimeout.
	BuildTimeout time.Duration

	// Dockerfile, when set, defines the environment whole, with Context
	// (the directory its COPY and ADD read) as its build context: an
	// image (a Harbor task's environment/). Image, Build, Files and Env are
	// then unused. Only a backend that runs images can build it.
	Dockerfile string
	Context    string
	// Source is the file the Dockerfile comes from (or the file that named
	// its image), to name when it fails to build; not its identity.
	Source string
	// ContextFiles are Context's files, relative to it: with Dockerfile,
	// the environment's identity.
	ContextFiles []string
	// CPU, MemoryGB and DiskGB are what the image asks of its sandboxes
	// (0: the backend's); NoInternet: its sandboxes reach no network
	// (a Harbor task's allow_internet = false).
	CPU, MemoryGB, DiskGB int
	NoInternet            bool
}

// EnvDirVar names the environment's directory to its build and its jobs.
const EnvDirVar = "FORGE_ENV_DIR"

// DefaultImage is the base image of an environment that names none.
const DefaultImage = "python:3.12-slim"

// DefaultBuildTimeout bounds a build when the environment sets no timeout.
const DefaultBuildTimeout = 30 * time.Minute

// SnapshotPrefix starts every environment snapshot's name: forge-env-<short hash>.
const SnapshotPrefix = "forge-env-"

// SnapshotName is the Daytona snapshot of the environment of that hash.
func SnapshotName(hash string) string { return SnapshotPrefix + ShortHash(hash) }

// ShortHash is the 16 hex digits of a hash that name a directory or snapshot.
func ShortHash(hash string) string { return hash[:min(16, len(hash))] }

// envHashFormat changes with what the hash covers, so rules never mix.
const envHashFormat = "forge-environment/1"

// EnvironmentHash digests e's content: image, build steps in order, variables
// and files (path and content, read from Src); not Name or BuildTimeout.
func EnvironmentHash(e *Environment) (string, error) {
	type file struct {
		Dst    string `json:"dst"`
		SHA256 string `json:"sha256"`
	}
	all := slices.Clone(e.Files)
	for _, rel := range e.ContextFiles {
		all = append(all, File{Src: filepath.Join(e.Context, filepath.FromSlash(rel)), Dst: "context/" + rel})
	}
	files := make([]file, 0, len(all))
	for _, f := range all {
		sum, err := fileDigest(f)
		if err != nil {
			return "", fmt.Errorf("environment %s: %w", e.Name, err)
		}
		files = append(files, file{Dst: f.Dst, SHA256: sum})
	}
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.Dst, b.Dst) })
	// encoding/json sorts map keys: the same content, the same bytes.
	b, err := json.Marshal(struct {
		Format string            `json:"format"`
		Image  string            `json:"image"`
		Build  []string          `json:"build"`
		Env    map[string]string `json:"env"`
		Files  []file            `json:"files"`
		// Only in the hash of an environment that has one: the others'
		// hashes stay what they were.
		Dockerfile string `json:"dockerfile,omitempty"`
		Resources  []int  `json:"resources,omitempty"`
	}{envHashFormat, cmp.Or(e.Image, DefaultImage), e.Build, e.Env, files, e.Dockerfile, resources(e)})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// resources are e's CPU, memory and disk, when it asks for any: they are
// its snapshot's.
func resources(e *Environment) []int {
	if e.CPU == 0 && e.MemoryGB == 0 && e.DiskGB == 0 {
		return nil
	}
	return []int{e.CPU, e.MemoryGB, e.DiskGB}
}

func fileDigest(f File) (string, error) {
	h := sha256.New()
	if f.Data != nil || f.Src == "" {
		h.Write(f.Data)
	} else {
		in, err := os.Open(f.Src)
		if err != nil {
			return "", err
		}
		_, err = io.Copy(h, in)
		in.Close()
		if err != nil {
			return "", fmt.Errorf("read %s: %w", f.Src, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// EnvironmentBuild is what making an environment ready did.
type EnvironmentBuild struct {
	Hash string
	// Reused: it was built already (by an earlier run or another forge).
	Reused bool
	// Where is the local directory, or the Daytona snapshot's name.
	Where string
	// Seconds is the wall time spent making it ready, waiting included.
	Seconds float64
}

// BuildError is a build that failed, or with Built an environment a job
// found unusable once built (Result.Lasting). It is permanent: the same
// content would fail again, so the run stops rather than play trials
// without it.
type BuildError struct {
	Name, Hash string
	// Tail is the last lines of the build log.
	Tail  []string
	Err   error
	Built bool
}

func (e *BuildError) Error() string {
	if e.Built {
		return fmt.Sprintf("environment %s (%s) cannot run a job: %v", e.Name, ShortHash(e.Hash), e.Err)
	}
	return fmt.Sprintf("environment %s (%s) failed to build: %v", e.Name, ShortHash(e.Hash), e.Err)
}

func (e *BuildError) Unwrap() error { return e.Err }

// Detail is what the log's last lines add to Error: up to n of them, the
// last, leaving out those Error says already (the builder's own error
// line, repeated by the service) and the service's state lines.
func (e *BuildError) Detail(n int) []string {
	said := e.Error()
	var out []string
	for i := len(e.Tail) - 1; i >= 0 && len(out) < n; i-- {
		l := strings.TrimSpace(e.Tail[i])
		if l == "" || strings.Contains(said, l) || strings.Contains(l, said) || redundantBuildLine(l, said) {
			continue
		}
		out = append(out, l)
	}
	slices.Reverse(out)
	return out
}

// redundantBuildLine: a log line that only restates the failure, "ERROR:
// <reason>", "Error: failed to create snapshot X, reason: <reason>", or a
// state line ("Creating snapshot X (error)").
func redundantBuildLine(l, said string) bool {
	if _, reason, ok := strings.Cut(l, "reason: "); ok && strings.Contains(said, reason) {
		return true
	}
	if rest, ok := strings.CutPrefix(l, "ERROR: "); ok && strings.Contains(said, rest) {
		return true
	}
	return strings.HasPrefix(l, "Creating snapshot ") && strings.HasSuffix(l, ")")
}

// Builder is a backend that makes an environment ready (or finds it ready)
// before its first job, sending the build's output to log line by line.
// Concurrent calls for one hash, from other forges too, build it once; an
// interrupted build never looks finished.
type Builder interface {
	BuildEnvironment(ctx context.Context, env *Environment, log func(line string)) (EnvironmentBuild, error)
}

// Turns lets one goroutine at a time make an environment ready: each key has
// one turn, which the others wait for. The zero value is ready.
type Turns struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

// Take waits for key's turn (calling waiting, if set, before waiting on
// another goroutine) and returns what ends it; ctx's error if ctx ends first.
func (t *Turns) Take(ctx context.Context, key string, waiting func()) (done func(), err error) {
	t.mu.Lock()
	if t.m == nil {
		t.m = map[string]chan struct{}{}
	}
	turn := t.m[key]
	if turn == nil {
		turn = make(chan struct{}, 1)
		t.m[key] = turn
	}
	t.mu.Unlock()
	select {
	case turn <- struct{}{}:
	default:
		if waiting != nil {
			waiting()
		}
		select {
		case turn <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return func() { <-turn }, nil
}
