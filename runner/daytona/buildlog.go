package daytona

// An environment's build log: the lines the SDK streams, the whole log
// fetched when a build failed unseen, and the last lines a BuildError
// carries.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	apiclient "github.com/daytonaio/daytona/libs/api-client-go"
)

// fetchLog reads the whole build log of a snapshot whose build ended, into
// the log, best effort: the SDK follows the log only while it sees the
// snapshot building, which a build failing before its first poll never
// is. The SDK has no call for it; the generated client's does.
func (b *envBuild) fetchLog(ctx context.Context, id string) {
	o := b.r.opts
	actx := context.WithValue(ctx, apiclient.ContextAccessToken, o.APIKey)
	resp, err := newAPIClient(o).SnapshotsAPI.GetSnapshotBuildLogs(actx, id).Execute()
	if err != nil || resp == nil {
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 16<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		b.line(sc.Text())
	}
}

// line passes one line of the build's log on, and keeps the last ones.
func (b *envBuild) line(l string) {
	if len(l) > maxLogLine {
		cut := maxLogLine
		for cut > 0 && !utf8.RuneStart(l[cut]) {
			cut--
		}
		l = l[:cut] + "…"
	}
	if !sdkLine(l) {
		b.output = true
	}
	if len(b.tail) == envTailLines {
		b.tail = append(b.tail[:0], b.tail[1:]...)
	}
	b.tail = append(b.tail, l)
	b.out(l)
}

// say passes a line of forge's own on.
func (b *envBuild) say(format string, args ...any) {
	b.line("daytona: " + fmt.Sprintf(format, args...))
}

// sdkLine recognises the lines the SDK writes into a build's log itself
// (snapshot.go streamSnapshotBuildLogs), and forge's own.
func sdkLine(l string) bool {
	for _, p := range []string{"Creating snapshot ", "Created snapshot ", "Error: ", "daytona: "} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}
