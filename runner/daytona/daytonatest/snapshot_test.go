package daytonatest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"
)

// apiDo calls the API directly, to see the real messages the SDK's
// Snapshot service drops (its handleAPIError keeps only the status text).
func apiDo(t *testing.T, s *Server, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.URL()+path, rd)
	req.Header.Set("Authorization", "Bearer "+s.APIKey())
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	b, _ := io.ReadAll(resp.Body)
	if len(b) > 0 {
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s %s: %d %q: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode, m
}

// onHost is the path on this machine of p, a path a sandbox or snapshot
// whose root is root sees: under root with RootFS, else p, mapped already.
func onHost(root, p string) string {
	if RootFS() {
		return filepath.Join(root, filepath.FromSlash(p))
	}
	return p
}

// drain reads a build's log channel to its end.
func drain(ch <-chan string) []string {
	var out []string
	for l := range ch {
		out = append(out, l)
	}
	return out
}

func TestSnapshotBuildThroughTheSDK(t *testing.T) {
	hold := make(chan struct{})
	s := Start(t, Options{Specs: specs, SnapshotBuildHold: hold})
	c := client(t, s)
	img := daytona.Base("python:3.12-slim").
		Env("FORGE_ENV", "/opt/forge/env").
		Env("PATH", "/opt/forge/env/bin:$PATH").
		Workdir("/opt/forge/env").
		Run(`mkdir -p bin && printf '#!/bin/sh\necho tool-ran\n' > bin/forge-tool && chmod +x bin/forge-tool`).
		Run(`echo built > "$FORGE_ENV/marker.txt" && echo step-output && pwd`)
	snap, logs, err := c.Snapshot.Create(ctx(t), &types.CreateSnapshotParams{Name: "forge-env-1", Image: img})
	if err != nil {
		t.Fatal(err)
	}
	if snap.State != "pending" || snap.Name != "forge-env-1" || snap.ID == "" {
		t.Fatalf("created %+v", snap)
	}
	// The SDK polls until it sees the build going, then follows its log.
	var lines []string
	for l := range logs {
		lines = append(lines, l)
		if strings.HasSuffix(l, "(building)") {
			break
		}
	}
	close(hold)
	lines = append(lines, drain(logs)...)
	all := strings.Join(lines, "\n")
	for _, want := range []string{"Creating snapshot forge-env-1 (pending)", "Step 6/6 : RUN echo built", "step-output", "Created snapshot forge-env-1 (active)"} {
		if !strings.Contains(all, want) {
			t.Errorf("build log lacks %q:\n%s", want, all)
		}
	}
	// With a root, the image's paths are its own; else mapped under the
	// snapshot's root on this machine.
	info := s.Snapshots()[0]
	wantWorkdir := filepath.Join(info.Root, "opt", "forge", "env")
	if RootFS() {
		wantWorkdir = "/opt/forge/env"
	}
	if info.State != "active" || info.Workdir != wantWorkdir ||
		info.Env["FORGE_ENV"] != info.Workdir || !strings.HasPrefix(info.Env["PATH"], info.Workdir+"/bin:") {
		t.Fatalf("snapshot %+v", info)
	}
	if !strings.Contains(info.Log, info.Workdir+"\n") {
		t.Errorf("RUN did not run in the WORKDIR:\n%s", info.Log)
	}
	marker := filepath.Join(onHost(info.Root, info.Workdir), "marker.txt")

	for _, key := range []string{"forge-env-1", snap.ID} {
		got, err := c.Snapshot.Get(ctx(t), key)
		if err != nil || got.State != "active" || got.ID != snap.ID || got.ErrorReason != nil {
			t.Fatalf("Get(%s) = %+v, %v", key, got, err)
		}
	}
	page, err := c.Snapshot.List(ctx(t), nil, nil)
	if err != nil || page.Total != 1 || len(page.Items) != 1 || page.Items[0].Name != "forge-env-1" {
		t.Fatalf("List = %+v, %v", page, err)
	}

	sb, err := c.Create(ctx(t), types.SnapshotParams{Snapshot: "forge-env-1",
		SandboxBaseParams: types.SandboxBaseParams{EnvVars: map[string]string{"FROM_REQUEST": "r"}}})
	if err != nil {
		t.Fatal(err)
	}
	run := func(cmd string) string {
		t.Helper()
		res, err := sb.Process.ExecuteCommand(ctx(t), cmd)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%s: %+v, %v", cmd, res, err)
		}
		return res.Result
	}
	if got := run(`cat "$FORGE_ENV/marker.txt" && forge-tool && echo "$FROM_REQUEST"`); got != "built\ntool-ran\nr\n" {
		t.Fatalf("in the sandbox: %q", got)
	}
	sbInfo := s.Sandboxes()[0]
	wantWD := filepath.Join(sbInfo.Root, "opt", "forge", "env")
	if RootFS() {
		wantWD = "/opt/forge/env"
	}
	if wd, err := sb.GetWorkingDir(ctx(t)); err != nil || wd != wantWD {
		t.Fatalf("work dir %q, %v, want %s", wd, err, wantWD)
	}
	// The sandbox's file system is its own: a file written over in place
	// or removed there is the snapshot's as it was.
	run(`echo changed > "$FORGE_ENV/marker.txt"`)
	if b, err := os.ReadFile(marker); err != nil || string(b) != "built\n" {
		t.Fatalf("the sandbox's write reached the snapshot: %q, %v", b, err)
	}
	run(`rm "$FORGE_ENV/marker.txt"`)
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the sandbox's rm reached the snapshot: %v", err)
	}

	// Deleting a snapshot in use is allowed; its sandbox keeps working.
	if err := c.Snapshot.Delete(ctx(t), snap); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Snapshot.Get(ctx(t), "forge-env-1"); !isNotFound(err) {
		t.Fatalf("Get after Delete: %v", err)
	}
	if got := run("forge-tool"); got != "tool-ran\n" {
		t.Fatalf("after the snapshot's deletion: %q", got)
	}
	if _, err := c.Create(ctx(t), types.SnapshotParams{Snapshot: "forge-env-1"}); statusOf(err) != 400 ||
		!strings.Contains(message(err), "not found") {
		t.Fatalf("create from a deleted snapshot: %v", err)
	}
	deleteAll(t, s, c)
	for _, op := range []string{OpCreateSnapshot, OpGetSnapshot, OpListSnapshots, OpDeleteSnapshot, OpSnapshotBuildLogs} {
		if s.Calls(op) == 0 {
			t.Errorf("no %s call recorded", op)
		}
	}
}

func TestSnapshotBuildFailure(t *testing.T) {
	s := Start(t, Options{Specs: specs})
	c := client(t, s)
	// A step that fails ends the snapshot in error with BuildKit's message,
	// as the API marks a build its runner failed; what the emulator cannot
	// build ends it build_failed.
	type failing struct {
		name, state, reason string
		img                 *daytona.DockerImage
	}
	cases := []failing{
		{"fails-run", "error", `process "/bin/sh -c echo \"failing\"; exit 3" did not complete successfully: exit code: 3`,
			daytona.Base("python:3.12-slim").Run("echo before-failing").Run(`echo "failing"; exit 3`)},
		{"fails-expose", "build_failed", "Dockerfile instruction EXPOSE (step 2/2) is not supported",
			daytona.Base("python:3.12-slim").Expose([]int{8080})},
	}
	if !RootFS() {
		// Mapped image paths reach a RUN step only through WORKDIR and
		// ENV; a root has them all.
		cases = append(cases, failing{"fails-literal-path", "build_failed", "names the image path /opt/forge/env literally",
			daytona.Base("python:3.12-slim").Workdir("/opt/forge/env").Run("mkdir -p /opt/forge/env/bin")})
	}
	for _, tc := range cases {
		_, logs, err := c.Snapshot.Create(ctx(t), &types.CreateSnapshotParams{Name: tc.name, Image: tc.img})
		if err != nil {
			t.Fatal(err)
		}
		lines := drain(logs)
		if last := lines[len(lines)-1]; !strings.HasPrefix(last, "Error: failed to create snapshot "+tc.name+", reason: ") ||
			!strings.Contains(last, tc.reason) {
			t.Errorf("%s: last log line %q, want the reason %q", tc.name, last, tc.reason)
		}
		got, err := c.Snapshot.Get(ctx(t), tc.name)
		if err != nil || got.State != tc.state || got.ErrorReason == nil || !strings.Contains(*got.ErrorReason, tc.reason) {
			t.Fatalf("%s: %+v, %v", tc.name, got, err)
		}
		_, err = c.Create(ctx(t), types.SnapshotParams{Snapshot: tc.name})
		if want := "Snapshot " + tc.name + " is " + tc.state; statusOf(err) != 400 || message(err) != want {
			t.Fatalf("create from %s: %v, want 400 %q", tc.name, err, want)
		}
	}
	if !strings.Contains(s.Snapshots()[0].Log, "before-failing\n") {
		t.Errorf("log of the failed build: %q", s.Snapshots()[0].Log)
	}
	if len(s.Sandboxes()) != 0 {
		t.Fatal("a refused create made a sandbox")
	}
}

func TestSnapshotRefusals(t *testing.T) {
	hold := make(chan struct{}) // never closed: builds stay building
	s := Start(t, Options{Specs: specs, SnapshotBuildHold: hold, SnapshotQuota: 2})
	c := client(t, s)
	ids := map[string]string{}
	mk := func(name string) error {
		sn, _, err := c.Snapshot.Create(ctx(t), &types.CreateSnapshotParams{Name: name, Image: daytona.Base("alpine:3.20").Run("true")})
		if err == nil {
			ids[name] = sn.ID
		}
		return err
	}
	if err := mk("a"); err != nil {
		t.Fatal(err)
	}
	_, err := c.Create(ctx(t), types.SnapshotParams{Snapshot: "a"})
	if statusOf(err) != 400 || !regexp.MustCompile(`^Snapshot a is (pending|building)$`).MatchString(message(err)) {
		t.Fatalf("create from a building snapshot: %v", err)
	}
	if err := mk("a"); statusOf(err) != 409 {
		t.Fatalf("duplicate: %v", err)
	}
	body := map[string]any{"name": "a", "buildInfo": map[string]any{"dockerfileContent": "FROM alpine:3.20"}}
	if st, m := apiDo(t, s, "POST", "/snapshots", body); st != 409 || m["message"] != `Snapshot with name "a" already exists for this organization` {
		t.Fatalf("duplicate: %d %v", st, m)
	}
	if err := mk("b"); err != nil {
		t.Fatal(err)
	}
	if err := mk("c"); statusOf(err) != 400 {
		t.Fatalf("over the quota: %v", err)
	}
	body["name"] = "c"
	if st, m := apiDo(t, s, "POST", "/snapshots", body); st != 400 || m["message"] != "Snapshot quota exceeded. Maximum allowed: 2" {
		t.Fatalf("over the quota: %d %v", st, m)
	}
	// DELETE finds the snapshot by name, then wants its ID.
	if st, m := apiDo(t, s, "DELETE", "/snapshots/b", nil); st != 400 || m["message"] != "Validation failed (uuid is expected)" {
		t.Fatalf("delete by name: %d %v", st, m)
	}
	// A deleted snapshot no longer counts.
	if st, _ := apiDo(t, s, "DELETE", "/snapshots/"+ids["b"], nil); st != 200 {
		t.Fatalf("delete: %d", st)
	}
	if err := mk("c"); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
	if st, m := apiDo(t, s, "GET", "/snapshots/nope", nil); st != 404 || m["message"] != "Snapshot with name nope not found" {
		t.Fatalf("unknown: %d %v", st, m)
	}
	for _, bad := range []struct {
		body map[string]any
		msg  string
	}{
		{map[string]any{"name": "x", "imageName": "python:latest"}, `Images with tag ":latest" are not allowed`},
		{map[string]any{"name": "x", "imageName": "python"}, "Image name must include a tag (e.g., ubuntu:22.04) or digest (@sha256:...)"},
		{map[string]any{"name": "x"}, "Must specify an image name when not using a build info entry"},
		{map[string]any{"name": "bad name", "imageName": "python:3.12"}, "Invalid snapshot name format. May contain letters, digits, dots, colons, and dashes"},
		{map[string]any{"name": "x", "imageName": "python:3.12", "buildInfo": map[string]any{"dockerfileContent": "FROM x:1"}},
			"Cannot specify an image name when using a build info entry"},
		{map[string]any{"name": "x", "entrypoint": []string{"sh"}, "buildInfo": map[string]any{"dockerfileContent": "FROM x:1"}},
			"Cannot specify an entrypoint when using a build info entry"},
		{map[string]any{"name": "x", "imageName": "python:3.12", "cpu": 64},
			"CPU request 64 exceeds maximum allowed per sandbox (4).\n" + perSandboxLimitAdvice},
	} {
		if st, m := apiDo(t, s, "POST", "/snapshots", bad.body); st != 400 || m["message"] != bad.msg {
			t.Errorf("%v: %d %v, want 400 %q", bad.body, st, m, bad.msg)
		}
	}
}

func TestSnapshotListPagesAndImageName(t *testing.T) {
	s := Start(t, Options{Specs: specs})
	c := client(t, s)
	for _, n := range []string{"p1", "p2", "p3"} {
		_, logs, err := c.Snapshot.Create(ctx(t), &types.CreateSnapshotParams{Name: n, Image: "python:3.12-slim"})
		if err != nil {
			t.Fatal(err)
		}
		if lines := drain(logs); !strings.Contains(strings.Join(lines, "\n"), "Created snapshot "+n+" (active)") {
			t.Fatalf("%s: %q", n, lines)
		}
	}
	pg, lim := 2, 2
	page, err := c.Snapshot.List(ctx(t), &pg, &lim)
	if err != nil || page.Total != 3 || page.Page != 2 || page.TotalPages != 2 || len(page.Items) != 1 {
		t.Fatalf("List(2, 2) = %+v, %v", page, err)
	}
	if page.Items[0].ImageName != "python:3.12-slim" {
		t.Fatalf("item %+v", page.Items[0])
	}
	// An image's snapshot has no build, so no build log (the API's 404).
	p1, err := c.Snapshot.Get(ctx(t), "p1")
	if err != nil {
		t.Fatal(err)
	}
	if st, m := apiDo(t, s, "GET", "/snapshots/"+p1.ID+"/build-logs", nil); st != 404 || m["message"] != "Snapshot "+p1.ID+" has no build info" {
		t.Fatalf("build logs of an image snapshot: %d %v", st, m)
	}
	sb, err := c.Create(ctx(t), types.SnapshotParams{Snapshot: "p2"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Delete(ctx(t)); err != nil {
		t.Fatal(err)
	}
}

// A build log fetched without follow is what there is so far; with follow
// it streams until the build ends (checked through the SDK above). That of
// an active snapshot is empty, as the API ends the answer at once; the
// route wants the snapshot's ID (a name is the API's database error, 500).
func TestSnapshotBuildLogWithoutFollow(t *testing.T) {
	s := Start(t, Options{Specs: specs})
	c := client(t, s)
	get := func(path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", s.URL()+path, nil)
		req.Header.Set("Authorization", "Bearer "+s.APIKey())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name, step, want string
	}{{"failed", "echo hello-log; exit 1", "hello-log\n"}, {"active", "echo hello-log", ""}} {
		sn, logs, err := c.Snapshot.Create(ctx(t), &types.CreateSnapshotParams{Name: tc.name, Image: daytona.Base("alpine:3.20").Run(tc.step)})
		if err != nil {
			t.Fatal(err)
		}
		drain(logs)
		st, b := get("/snapshots/" + sn.ID + "/build-logs")
		if st != 200 || !strings.Contains(b, tc.want) || tc.want == "" && b != "" {
			t.Errorf("%s: %d %q", tc.name, st, b)
		}
		if st, _ := get("/snapshots/" + tc.name + "/build-logs"); st != 500 {
			t.Errorf("%s by name: %d", tc.name, st)
		}
	}
}

// Docker takes an escaped or single-quoted dollar in ENV literally.
func TestSnapshotEnvDollars(t *testing.T) {
	s := Start(t, Options{Specs: specs})
	c := client(t, s)
	img := daytona.Base("alpine:3.20").Env("BASE", "b").Env("ESCAPED", `"cost \$5 \"$BASE\""`).Env("QUOTED", `'$BASE'`).Env("PLAIN", "${BASE}x")
	_, logs, err := c.Snapshot.Create(ctx(t), &types.CreateSnapshotParams{Name: "dollars", Image: img})
	if err != nil {
		t.Fatal(err)
	}
	drain(logs)
	env := s.Snapshots()[0].Env
	if env["ESCAPED"] != `cost $5 "b"` || env["QUOTED"] != "$BASE" || env["PLAIN"] != "bx" {
		t.Fatalf("env = %q", env)
	}
}

// The snapshot routes are checked against the spec like the others: a
// request the spec refuses is a violation (and every answer of the tests
// above was validated, SnapshotDto's required keys included).
func TestSnapshotViolationsAreCaught(t *testing.T) {
	s := NewServer(Options{Specs: specs})
	defer s.Close()
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/snapshots", `{"cpu":"two"}`},
		{"GET", "/snapshots?limit=500", ""},
		{"GET", "/snapshots/x/build-logs?follow=maybe", ""},
	} {
		req, _ := http.NewRequest(r.method, s.URL()+r.path, strings.NewReader(r.body))
		req.Header.Set("Authorization", "Bearer "+s.APIKey())
		if r.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	v := s.Violations()
	if len(v) != 3 || !strings.Contains(v[0], "createSnapshot request") || !strings.Contains(v[1], "getAllSnapshots request") ||
		!strings.Contains(v[2], "getSnapshotBuildLogs request") {
		t.Fatalf("violations = %q", v)
	}
}

// A Dockerfile's COPY reads the build context the SDK pushed to the object
// storage (its push access, then S3): files and directories land at their
// image paths, relative ones under the WORKDIR; a source not in the
// context fails the build with Docker's words.
func TestSnapshotBuildWithContext(t *testing.T) {
	s := Start(t, Options{Specs: specs})
	c := client(t, s)
	t.Chdir(t.TempDir()) // the SDK names context entries by the local path as given
	if err := os.MkdirAll(filepath.Join("task", "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"task/app.py": "print('hi')\n", "task/data/rows.csv": "a,1\nb,2\n"} {
		if err := os.WriteFile(filepath.FromSlash(name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	img := daytona.Base("python:3.12-slim").Workdir("/app").
		AddLocalFile("task/app.py", "/app/app.py").
		AddLocalDir("task/data", "data/").
		Run("cat app.py data/rows.csv > both.txt")
	_, logs, err := c.Snapshot.Create(ctx(t), &types.CreateSnapshotParams{Name: "with-context", Image: img})
	if err != nil {
		t.Fatal(err)
	}
	drain(logs)
	info := s.Snapshots()[0]
	if info.State != "active" {
		t.Fatalf("snapshot %s: %s\n%s", info.State, info.ErrorReason, info.Log)
	}
	if b, err := os.ReadFile(filepath.Join(onHost(info.Root, info.Workdir), "both.txt")); err != nil || string(b) != "print('hi')\na,1\nb,2\n" {
		t.Fatalf("both.txt: %q, %v\n%s", b, err, info.Log)
	}
	if s.Calls(OpPushAccess) != 1 || s.Calls(OpStorage) == 0 {
		t.Errorf("push access %d, storage calls %d", s.Calls(OpPushAccess), s.Calls(OpStorage))
	}
	sb, err := c.Create(ctx(t), types.SnapshotParams{Snapshot: "with-context"})
	if err != nil {
		t.Fatal(err)
	}
	wd, err := sb.GetWorkingDir(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := sb.Process.ExecuteCommand(ctx(t), "cd "+wd+" && cat app.py data/rows.csv"); err != nil || res.Result != "print('hi')\na,1\nb,2\n" {
		t.Fatalf("in the sandbox: %+v, %v", res, err)
	}

	missing := daytona.Base("python:3.12-slim").Copy("nowhere.txt", "/app/")
	_, logs, err = c.Snapshot.Create(ctx(t), &types.CreateSnapshotParams{Name: "no-context", Image: missing})
	if err != nil {
		t.Fatal(err)
	}
	drain(logs)
	found := false
	for _, sn := range s.Snapshots() {
		if sn.Name == "no-context" {
			found = true
			if sn.State != "error" || !strings.Contains(sn.ErrorReason, `"/nowhere.txt": not found`) {
				t.Errorf("a COPY of nothing: %s %q", sn.State, sn.ErrorReason)
			}
		}
	}
	if !found {
		t.Error("no snapshot no-context")
	}
	deleteAll(t, s, c)
}
