package forge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// EnvironmentsDir is where a run keeps its environments' build logs.
const EnvironmentsDir = "environments"

// environments builds each environment of a run once, when the first job
// that needs it is about to start; jobs that need it meanwhile wait.
type environments struct {
	builder runner.Builder
	// slots bounds the builds under way (Options.MaxBuilds).
	slots chan struct{}
	mu    sync.Mutex
	m     map[string]*envBuild
	order []*envBuild
}

// DefaultMaxBuilds is how many environments a run builds at once: a suite
// whose every task has its own image builds a few at a time.
const DefaultMaxBuilds = 4

// taskImageFailed says why job cannot be played when err is its task's
// own image failing to build (the build log's last lines), and whether it
// is: then only that task's trials fail, not the run.
func taskImageFailed(job runner.Job, err error) (string, bool) {
	var be *runner.BuildError
	if job.TaskID == "" || job.Environment == nil || job.Environment.Dockerfile == "" || !errors.As(err, &be) {
		return "", false
	}
	why := "task " + job.TaskID + "'s image: " + be.Error()
	if d := be.Detail(3); len(d) > 0 {
		why += " (" + strings.Join(d, " | ") + ")"
	}
	return why, true
}

type envBuild struct {
	done  chan struct{}
	built record.EnvironmentBuilt
	err   error
}

// built is what the run did to each environment, in the order it did it.
func (e *environments) built() []record.EnvironmentBuilt {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []record.EnvironmentBuilt
	for _, b := range e.order {
		select {
		case <-b.done:
			out = append(out, b.built)
		default: // still building: the run was interrupted
		}
	}
	return out
}

// environment makes env ready: the first caller builds it, the others
// wait for that build (or for ctx). A failed build stops the run: the
// error is a *runner.UnusableError around the *runner.BuildError.
func (s *state) environment(ctx context.Context, env *runner.Environment) error {
	e := &s.envs
	e.mu.Lock()
	b, started := e.m[env.Hash]
	if !started {
		b = &envBuild{done: make(chan struct{})}
		e.m[env.Hash] = b
		e.order = append(e.order, b)
	}
	e.mu.Unlock()
	if started {
		select {
		case <-b.done:
			e.mu.Lock() // spoil may have set it since
			defer e.mu.Unlock()
			return b.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer close(b.done)
	b.built, b.err = s.build(ctx, env)
	return b.err
}

// spoil marks env, built, unusable for the rest of the run: a job of it
// failed in a way a fresh sandbox would repeat (Result.Lasting, why). Its
// later jobs fail at once, as a failed build's do, and the record names
// the environment's fault.
func (s *state) spoil(env *runner.Environment, why string) {
	e := &s.envs
	e.mu.Lock()
	defer e.mu.Unlock()
	if b := e.m[env.Hash]; b != nil && b.err == nil {
		b.built.Error = why
		b.err = &runner.UnusableError{Kind: runner.ErrInfra,
			Err: &runner.BuildError{Name: env.Name, Hash: env.Hash, Err: errors.New(why), Built: true}}
	}
}

// build builds env, its log to the run's environments/ directory and, line
// by line, to the run's events.
func (s *state) build(ctx context.Context, env *runner.Environment) (record.EnvironmentBuilt, error) {
	built := record.EnvironmentBuilt{Name: env.Name, Hash: env.Hash, Source: env.Source}
	if rel, err := filepath.Rel(s.o.Manifest.Dir, env.Source); env.Source != "" && err == nil && filepath.IsLocal(rel) {
		built.Source = filepath.ToSlash(rel)
	}
	rel := filepath.ToSlash(filepath.Join(EnvironmentsDir, env.Name+"-"+runner.ShortHash(env.Hash)+".log"))
	path := filepath.Join(s.dir, filepath.FromSlash(rel))
	// The log file is made at its first line: a reused environment
	// leaves none.
	var (
		logMu   sync.Mutex
		logFile *os.File
		logErr  error
	)
	log := func(line string) {
		line = s.mask.String(line)
		logMu.Lock()
		if logFile == nil && logErr == nil {
			if logErr = os.MkdirAll(filepath.Dir(path), 0o755); logErr == nil {
				logFile, logErr = os.Create(path)
			}
		}
		if logFile != nil {
			fmt.Fprintln(logFile, line)
		}
		logMu.Unlock()
		s.o.emit(Event{Kind: EventEnvironment, Job: env.Name, Env: env, Line: &line})
	}
	select {
	case s.envs.slots <- struct{}{}:
		defer func() { <-s.envs.slots }()
	case <-ctx.Done():
		return built, ctx.Err()
	}
	s.o.emit(Event{Kind: EventEnvironment, Job: env.Name, Env: env})
	start := time.Now()
	got, err := s.envs.builder.BuildEnvironment(ctx, env, log)
	built.Where, built.Reused = got.Where, got.Reused
	built.BuildSeconds = cmp.Or(got.Seconds, time.Since(start).Seconds())
	// The builder has returned: nothing logs any more.
	logMu.Lock()
	defer logMu.Unlock()
	if logFile != nil && logFile.Close() == nil {
		built.Log = rel
	}
	if logErr != nil && err == nil {
		err = fmt.Errorf("environment %s: its build log: %w", env.Name, logErr)
	}
	if err != nil {
		built.Error = s.mask.String(err.Error())
	}
	s.o.emit(Event{Kind: EventEnvironment, Job: env.Name, Env: env, Built: &built, Err: err})
	var be *runner.BuildError
	switch {
	case err == nil:
		return built, nil
	case ctx.Err() != nil:
		return built, ctx.Err()
	case errors.As(err, &be):
		for i := range be.Tail {
			be.Tail[i] = s.mask.String(be.Tail[i])
		}
		return built, &runner.UnusableError{Kind: runner.ErrInfra, Err: err}
	default:
		return built, &runner.UnusableError{Kind: runner.ErrInfra,
			Err: &runner.BuildError{Name: env.Name, Hash: env.Hash, Err: err}}
	}
}
