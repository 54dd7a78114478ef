package report

// One trial's section of the HTML page.

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"fmt"
	"html/template"
	"maps"
	"slices"
	"strings"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

type htmlTrial struct {
	Name, Anchor, Status, Health string
	Summary                      string // exit code, runtime, score on one line
	Facts                        []htmlFact
	Error                        string
	Artifact                     string
	ArtifactNote                 string
	ArtifactImage                template.URL
	Output, Stderr               string
	// How much of each file the record holds, and where it is.
	OutputFile, StderrFile, ArtifactFile htmlLog
	Submitted                            []htmlFact
	Judges                               []htmlFact
	Open                                 bool
}

// htmlLog is one of a trial's stored files: what part the record holds, its
// path in the run's directory and, with Options.RunDir, a link to it.
type htmlLog struct{ Note, Path, Href string }

func newHTMLLog(f logFile, opts Options) htmlLog {
	return htmlLog{Note: f.Note, Path: f.Path, Href: logHref(opts.RunDir, f.Path)}
}

func newHTMLTrial(c candidate, r record.Trial, opts Options) htmlTrial {
	name := fmt.Sprintf("trial %d", r.Trial)
	if r.TaskID != "" {
		name = "task " + r.TaskID
		if c.multi {
			name += fmt.Sprintf(" · trial %d", r.Trial)
		}
	}
	t := htmlTrial{Name: name}
	t.Status, t.Health = TrialStatus(&r)
	t.Open = t.Health != "ok" || c.trials() == 1 // failed or wrong, or the only one
	switch {
	case !r.Success:
		t.Error = text.Output(r.ErrorMessage, opts.MaxOutputBytes)
	case r.Wrong():
		t.Error = "wrong: " + WrongText(&r)
	}
	t.Facts = []htmlFact{{"exit code", r.ExitText()}, {"runtime", text.Seconds(r.RuntimeSeconds)}}
	if r.Score != nil {
		t.Facts = append(t.Facts, htmlFact{"score", text.Score(*r.Score)})
	}
	summary := make([]string, len(t.Facts))
	for i, f := range t.Facts {
		summary[i] = f.Name + " " + f.Value
	}
	t.Summary = strings.Join(summary, " · ")
	if r.SandboxID != "" {
		t.Facts = append(t.Facts, htmlFact{"sandbox", text.OneLine(r.SandboxID)})
	}
	if ph := phases(r.Phases); ph != "" {
		t.Facts = append(t.Facts, htmlFact{"phases", ph})
	}
	if r.SubmitError != "" {
		t.Facts = append(t.Facts, htmlFact{"result file", "ignored: " + text.OneLine(r.SubmitError)})
	}
	if len(r.Tampered) > 0 {
		t.Facts = append(t.Facts, htmlFact{"tampered", text.OneLine(strings.Join(r.Tampered, ", "))})
	}

	if r.ArtifactContent != "" || r.ArtifactBytes > 0 {
		t.setArtifact(&r, opts)
	}
	t.OutputFile, t.StderrFile = newHTMLLog(stdoutFile(&r), opts), newHTMLLog(stderrFile(&r), opts)
	t.Output = text.Output(r.Output, opts.MaxOutputBytes)
	if r.OutputTruncated && t.Output != "" {
		t.Output += "\n… [output cut by forge]"
	}
	t.Stderr = text.Output(r.Stderr, opts.MaxOutputBytes)

	for _, k := range slices.Sorted(maps.Keys(r.Submitted)) {
		t.Submitted = append(t.Submitted, htmlFact{text.OneLine(k), text.Shorten(text.OneLine(fmt.Sprint(r.Submitted[k])), 200)})
	}
	t.Judges = htmlJudges(r.Judges)
	return t
}

// setArtifact shows the trial's artifact: its start, what of it the
// record holds and where it is.
func (t *htmlTrial) setArtifact(r *record.Trial, opts Options) {
	size := text.Bytes(float64(artifactSize(*r)))
	name := cmp.Or(artifactFile(r).Path, "artifact") // a path safeRunPath refuses is not named
	t.ArtifactNote = name + " · " + size
	if r.ArtifactTruncated {
		t.ArtifactNote += " · cut by forge"
	}
	if r.ArtifactEncoding == "base64" {
		t.ArtifactNote += " · binary, shown as base64"
		t.ArtifactImage = imageDataURL(*r)
	}
	t.Artifact = text.Output(r.ArtifactContent, opts.MaxOutputBytes)
	t.ArtifactFile = newHTMLLog(artifactFile(r), opts)
	if t.ArtifactFile.Href == "" {
		t.ArtifactFile.Path = "" // the note above names it
	}
}

// htmlJudges are what each judge said: its score, its reason, or why it
// failed.
func htmlJudges(judges []record.JudgeResult) []htmlFact {
	var out []htmlFact
	for _, j := range judges {
		v := "—"
		if j.Score != nil {
			v = text.Num(*j.Score)
		}
		if j.Reason != "" {
			v += " · " + text.OneLine(j.Reason)
		}
		if j.Error != "" {
			v += " · failed: " + text.OneLine(j.Error)
		}
		out = append(out, htmlFact{text.OneLine(j.Name), text.Shorten(v, 300)})
	}
	return out
}

// phases lists the non-zero phases: "create 0.8s · execute 1.9s".
func phases(p runner.Phases) string {
	var parts []string
	for _, ph := range p.List() {
		if ph.Seconds > 0 {
			parts = append(parts, string(ph.Phase)+" "+text.Seconds(ph.Seconds))
		}
	}
	return strings.Join(parts, " · ")
}

// imageDataURL is a data: URL for a base64 artifact whose first bytes say it
// is a PNG, JPEG, GIF or WebP image, or "".
func imageDataURL(r record.Trial) template.URL {
	if r.ArtifactTruncated {
		return ""
	}
	b, err := base64.StdEncoding.DecodeString(r.ArtifactContent)
	if err != nil {
		return ""
	}
	var mime string
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		mime = "image/png"
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		mime = "image/jpeg"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		mime = "image/gif"
	case len(b) > 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		mime = "image/webp"
	default:
		return ""
	}
	// The content is our own re-encoding of bytes we checked, so the URL
	// cannot carry anything but the image.
	return template.URL("data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(b))
}
