package daytona

// An environment's image: the Dockerfile the SDK's image builder writes
// for its snapshot (ENV, WORKDIR, its files and build steps as RUN lines).

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"

	"github.com/forge-run/forge/runner"
)

// MaxEnvironmentFiles bounds the bytes of an environment's files, which
// travel in the snapshot's Dockerfile, base64 in RUN lines: the SDK's
// other way, a build context in Daytona's object storage, forge does not
// support yet.
const MaxEnvironmentFiles = 1 << 20

// Docker runs a RUN line through "/bin/sh -c" as one argument, which Linux
// caps at 128 KiB (MAX_ARG_STRLEN): a file's base64 goes in chunks, and a
// line holds at most maxRunLine bytes.
const (
	fileChunk  = 64 << 10
	maxRunLine = 96 << 10
)

// image is the snapshot's image, through the SDK's builder: env.Env, then
// EnvDirVar and PATH (no variable of the environment overrides them), the
// WORKDIR, the files, the build steps.
func (b *envBuild) image() (*daytona.DockerImage, error) {
	e := b.env
	if e.Dockerfile != "" {
		return b.dockerImage(), nil
	}
	base := cmp.Or(e.Image, runner.DefaultImage)
	if strings.ContainsFunc(base, func(c rune) bool { return c <= ' ' }) {
		return nil, b.failure(fmt.Errorf("image %q is not an image name", base))
	}
	img := daytona.Base(base)
	for _, k := range slices.Sorted(maps.Keys(e.Env)) {
		v := e.Env[k]
		switch {
		case !runner.ValidEnvName(k):
			return nil, b.failure(fmt.Errorf("variable name %q cannot be an image's ENV", k))
		case strings.ContainsAny(v, "\x00\r\n"):
			return nil, b.failure(fmt.Errorf("variable %s holds a line break or a NUL byte, which a Dockerfile's ENV cannot hold", k))
		}
		img = img.Env(k, dockerQuote(v))
	}
	img = img.Env(runner.EnvDirVar, EnvDir).Env("PATH", `"`+EnvDir+`/bin:$PATH"`).Workdir(EnvDir)
	files, err := b.fileLines()
	if err != nil {
		return nil, err
	}
	for _, l := range files {
		img = img.Run(l)
	}
	for i, step := range e.Build {
		l, err := stepLine(step)
		if err != nil {
			return nil, b.failure(fmt.Errorf("build step %d: %w", i+1, err))
		}
		img = img.Run(l)
	}
	return img, nil
}

// dockerQuote makes v a Dockerfile word that ENV takes literally: double
// quotes, with \, " and $ escaped (BuildKit's shell lexer).
func dockerQuote(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`).Replace(v) + `"`
}

// stepLine is a RUN line that runs step with /bin/sh -c as it is: the step
// itself when Docker passes it on untouched (one line, no heredoc, no
// trailing backslash, no JSON array), else its base64 decoded and run.
func stepLine(step string) (string, error) {
	t := strings.TrimSpace(step)
	switch {
	case strings.ContainsRune(step, 0):
		return "", errors.New("it holds a NUL byte")
	case t != "" && !strings.ContainsAny(t, "\r\n") && !strings.Contains(t, "<<") && !strings.HasSuffix(t, `\`) && !strings.HasPrefix(t, "["):
		return t, nil
	}
	l := fmt.Sprintf(`sh -c "$(printf %%s '%s' | base64 -d)"`, base64.StdEncoding.EncodeToString([]byte(step)))
	if len(l) > maxRunLine {
		return "", fmt.Errorf("it is %d bytes; a Dockerfile RUN line holds at most %d", len(step), maxRunLine)
	}
	return l, nil
}

// fileLines are the RUN lines that write the environment's files in the
// WORKDIR: each file's base64 decoded, big ones in chunks, commands joined
// up to maxRunLine bytes a line.
func (b *envBuild) fileLines() ([]string, error) {
	var cmds []string
	dirs := map[string]bool{}
	total := 0
	for i, f := range b.env.Files {
		dst, err := runner.RelPath(f.Dst)
		if err != nil {
			return nil, b.failure(fmt.Errorf("file %w", err))
		}
		data := f.Data
		if data == nil && f.Src != "" {
			if data, err = os.ReadFile(f.Src); err != nil {
				return nil, b.failure(fmt.Errorf("file %s: %w", f.Dst, err))
			}
		}
		if total += len(data); total > MaxEnvironmentFiles {
			return nil, b.failure(fmt.Errorf("its files are more than %d bytes; on Daytona they are written into the snapshot by its Dockerfile, "+
				"which holds at most %d (larger files need the SDK's build contexts, which forge does not support yet): "+
				"fetch them in a build step instead", MaxEnvironmentFiles, MaxEnvironmentFiles))
		}
		if d := path.Dir(dst); d != "." && !dirs[d] {
			dirs[d] = true
			cmds = append(cmds, "mkdir -p "+shQuote(d))
		}
		enc := base64.StdEncoding.EncodeToString(data)
		switch {
		case len(data) == 0:
			cmds = append(cmds, ": > "+shQuote(dst))
		case len(enc) <= fileChunk:
			cmds = append(cmds, fmt.Sprintf("printf %%s '%s' | base64 -d > %s", enc, shQuote(dst)))
		default:
			tmp := fmt.Sprintf(".forge-file-%d.b64", i)
			op := ">"
			for chunk := range slices.Chunk([]byte(enc), fileChunk) {
				cmds = append(cmds, fmt.Sprintf("printf %%s '%s' %s %s", chunk, op, tmp))
				op = ">>"
			}
			cmds = append(cmds, fmt.Sprintf("base64 -d %s > %s && rm -f %s", tmp, shQuote(dst), tmp))
		}
	}
	var lines []string
	for _, c := range cmds {
		if n := len(lines); n > 0 && len(lines[n-1])+len(" && ")+len(c) <= maxRunLine {
			lines[n-1] += " && " + c
		} else {
			lines = append(lines, c)
		}
	}
	return lines, nil
}

// contextDest is where an image's build context is copied in the image:
// the SDK uploads a context only with a COPY of its own, which forge
// points away from the image's working directory.
const contextDest = "/tmp/forge-build-context"

// dockerImage is the image of an environment defined by a Dockerfile: the
// Dockerfile with its COPY and ADD sources read from the build context as
// the SDK uploads it (under the context's path as given), and the context.
func (b *envBuild) dockerImage() *daytona.DockerImage {
	e := b.env
	base := e.Context
	// A path relative to forge's directory gives the same archive, and so
	// the same upload, on every machine.
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, e.Context); err == nil && filepath.IsLocal(rel) {
			base = filepath.ToSlash(rel)
		}
	}
	img := daytona.FromDockerfile(contextSources(e.Dockerfile, base))
	if len(e.ContextFiles) > 0 {
		img = img.AddLocalDir(base, contextDest)
	}
	return img
}

// contextSources is dockerfile with the sources of its COPY and ADD steps
// (not URLs, not --from another stage) under base, where the build context
// lands in the archive the SDK uploads.
func contextSources(dockerfile, base string) string {
	lines := strings.Split(dockerfile, "\n")
	for i := 0; i < len(lines); i++ {
		// A step continued over several lines is rewritten whole, on its
		// first line; the others are left empty.
		j := i
		step := strings.TrimRight(lines[i], "\r")
		for strings.HasSuffix(step, `\`) && j+1 < len(lines) {
			j++
			step = strings.TrimSuffix(step, `\`) + " " + strings.TrimSpace(strings.TrimRight(lines[j], "\r"))
		}
		if rewritten, ok := copySources(step, base); ok {
			lines[i] = rewritten
			clear(lines[i+1 : j+1])
		}
		i = j
	}
	return strings.Join(lines, "\n")
}

// copySources rewrites one COPY or ADD step; false for any other step.
func copySources(step, base string) (string, bool) {
	f := strings.Fields(step)
	if len(f) < 3 || !strings.EqualFold(f[0], "COPY") && !strings.EqualFold(f[0], "ADD") {
		return "", false
	}
	args := f[1:]
	for len(args) > 0 && strings.HasPrefix(args[0], "--") {
		if strings.HasPrefix(args[0], "--from=") {
			return "", false
		}
		args = args[1:]
	}
	// under puts the sources, all of srcs but the destination, under base.
	under := func(srcs []string) {
		for k, src := range srcs[:len(srcs)-1] {
			if !strings.Contains(src, "://") {
				srcs[k] = path.Join(base, strings.TrimPrefix(path.Clean("/"+src), "/"))
			}
		}
	}
	flags := f[1 : len(f)-len(args)]
	switch rest := strings.Join(args, " "); {
	case strings.HasPrefix(rest, "["): // the JSON form
		var list []string
		if err := json.Unmarshal([]byte(rest), &list); err != nil || len(list) < 2 {
			return "", false
		}
		under(list)
		j, _ := json.Marshal(list)
		args = []string{string(j)}
	case len(args) < 2:
		return "", false
	default:
		under(args)
	}
	return strings.Join(slices.Concat(f[:1], flags, args), " "), true
}
