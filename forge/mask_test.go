package forge

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/forge-run/forge/internal/mask"
	"github.com/forge-run/forge/record"
)

// TestMaskResultMasksEveryText: with every string and []byte of a
// record.Trial holding a secret (found by reflection, nested ones and
// map keys included: no field named here), masking leaves the secret in
// the unmasked fields alone, and nowhere in the trial's JSON but there.
func TestMaskResultMasksEveryText(t *testing.T) {
	const secret = "sk-test-0123456789"
	var r record.Trial
	fill(reflect.ValueOf(&r).Elem(), secret)
	maskResult(mask.New(secret), &r)

	left := map[string]bool{}
	holding(reflect.ValueOf(r), "", secret, left)
	if want := slices.Sorted(maps.Keys(unmasked)); !slices.Equal(slices.Sorted(maps.Keys(left)), want) {
		t.Errorf("the secret is left in %v, want in %v alone", slices.Sorted(maps.Keys(left)), want)
	}
	if !r.SecretInArtifact {
		t.Error("an artifact holding the secret is not flagged")
	}

	// What the record keeps of the trial: the unmasked fields emptied, no
	// secret in any form the masker knows.
	blank(reflect.ValueOf(&r).Elem(), "")
	b, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	if m := mask.New(secret); m.Contains(b) {
		t.Errorf("the trial's JSON holds the secret:\n%s", b)
	}
}

// fill sets every string and []byte v holds to secret, making one element
// of each slice, one entry of each map and what each pointer points to.
func fill(v reflect.Value, secret string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(secret)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), secret)
	case reflect.Interface: // a decoded JSON value: text nested in lists and objects
		v.Set(reflect.ValueOf(map[string]any{secret: []any{secret, map[string]any{"k": secret}}}))
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), secret)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte(secret))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), secret)
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, secret)
		fill(e, secret)
		v.SetMapIndex(k, e)
	}
}

// holding adds to left the field ("Type.Field") of each text in v that
// still holds secret; field is the one v is in.
func holding(v reflect.Value, field, secret string, left map[string]bool) {
	switch v.Kind() {
	case reflect.String:
		if strings.Contains(v.String(), secret) {
			left[field] = true
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			holding(v.Elem(), field, secret, left)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				holding(v.Field(i), v.Type().Name()+"."+f.Name, secret, left)
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			if strings.Contains(string(v.Bytes()), secret) {
				left[field] = true
			}
			return
		}
		for i := range v.Len() {
			holding(v.Index(i), field, secret, left)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			holding(it.Key(), field, secret, left)
			holding(it.Value(), field, secret, left)
		}
	}
}

// blank empties the unmasked fields v holds.
func blank(v reflect.Value, field string) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			blank(v.Elem(), field)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			switch name := v.Type().Name() + "." + f.Name; {
			case !f.IsExported():
			case unmasked[name]:
				v.Field(i).SetZero()
			default:
				blank(v.Field(i), name)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Uint8 {
			for i := range v.Len() {
				blank(v.Index(i), field)
			}
		}
	}
}
