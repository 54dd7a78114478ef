package forge

import (
	"reflect"

	"github.com/forge-run/forge/internal/mask"
	"github.com/forge-run/forge/record"
)

// unmasked are the text fields of a trial never masked, by type and field:
// the ids and paths the record, the viewer and --resume find things by,
// kinds, and the artifact, the candidate's product, stored as written
// (SecretInArtifact flags it). Every other string, []byte and text nested
// in a record.Trial is masked, a field added tomorrow included.
var unmasked = map[string]bool{
	"Result.CandidateID":      true,
	"Result.TaskID":           true,
	"Result.SandboxID":        true,
	"Result.Backend":          true,
	"Result.ErrorKind":        true,
	"Result.OutputPath":       true,
	"Result.StderrPath":       true,
	"Result.TranscriptPath":   true,
	"Result.ArtifactPath":     true,
	"Result.ArtifactEncoding": true,
	"Result.VerifierLogPath":  true,
	"Result.Artifact":         true,
	"Trial.Environment":       true, // the environment's hash
	"AttemptError.Kind":       true,
	"AttemptError.SandboxID":  true,
	"CheckResult.Name":        true, // the manifest's scorer, by which results are grouped
	"JudgeResult.Name":        true,
}

// maskResult replaces every secret in the text a job brought back with ***
// (maskText), and flags an artifact that holds one.
func maskResult(m *mask.Masker, r *record.Trial) {
	if m == nil {
		return
	}
	r.SecretInArtifact = m.Contains(r.Artifact) || m.Contains([]byte(r.ArtifactContent))
	maskText(m, reflect.ValueOf(r).Elem())
}

// maskIn masks the text of *p (maskText): what a trial gains after its
// job, its checks and its judges' words.
func maskIn[T any](m *mask.Masker, p *T) {
	if m != nil {
		maskText(m, reflect.ValueOf(p).Elem())
	}
}

// maskText masks, in place, every string and []byte v holds: itself, its
// fields (but those unmasked names), its elements, a map's keys and
// values, what a pointer or interface holds. Slices and maps are copied,
// never written through: a decoded value may be shared.
func maskText(m *mask.Masker, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); s != "" {
			v.SetString(m.String(s))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			maskText(m, v.Elem())
		}
	case reflect.Interface:
		if !v.IsNil() {
			c := settable(v.Elem())
			maskText(m, c)
			v.Set(c)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && !unmasked[t.Name()+"."+f.Name] {
				maskText(m, v.Field(i))
			}
		}
	case reflect.Slice:
		if v.IsNil() {
			return
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte(m.String(string(v.Bytes()))))
			return
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(c, v)
		for i := range c.Len() {
			maskText(m, c.Index(i))
		}
		v.Set(c)
	case reflect.Array:
		for i := range v.Len() {
			maskText(m, v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		c := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			k, e := settable(it.Key()), settable(it.Value())
			maskText(m, k)
			maskText(m, e)
			c.SetMapIndex(k, e)
		}
		v.Set(c)
	}
}

// settable is a copy of x that can be set.
func settable(x reflect.Value) reflect.Value {
	c := reflect.New(x.Type()).Elem()
	c.Set(x)
	return c
}
