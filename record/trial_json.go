package record

// A trial's JSON: one flat object whose keys keep the order records have
// always had, Trial's own among runner.Result's.

import (
	"cmp"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// layout is a Trial as JSON: a struct of runner.Result's fields in order,
// each of Trial's own after the key its after tag names (one without the
// tag after the Trial field before it), and sandbox_id and error_message
// last, null when empty, as runner.Result writes them.
type layout struct {
	typ  reflect.Type
	from [][]int // the Trial field behind each of typ's
}

var trialLayout = sync.OnceValue(func() layout {
	tt := reflect.TypeFor[Trial]()
	after := map[string][]int{}
	anchor := ""
	for i := 1; i < tt.NumField(); i++ {
		anchor = cmp.Or(tt.Field(i).Tag.Get("after"), anchor)
		after[anchor] = append(after[anchor], i)
	}
	var l layout
	var fields []reflect.StructField
	add := func(f reflect.StructField, from ...int) {
		fields = append(fields, reflect.StructField{Name: f.Name, Type: f.Type, Tag: f.Tag})
		l.from = append(l.from, from)
	}
	var last []reflect.StructField
	placed := 0
	rt := tt.Field(0).Type
	for i := range rt.NumField() {
		f := rt.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch key {
		case "-":
		case "sandbox_id", "error_message":
			f.Type, f.Index = reflect.TypeFor[*string](), []int{0, i}
			last = append(last, f)
		default:
			add(f, 0, i)
			for _, j := range after[key] {
				add(tt.Field(j), j)
				placed++
			}
		}
	}
	for _, f := range last {
		add(f, f.Index...)
	}
	if placed != tt.NumField()-1 {
		panic("record: a Trial field's after tag names no key of runner.Result")
	}
	l.typ = reflect.StructOf(fields)
	return l
})

// MarshalJSON writes t in its layout.
func (t Trial) MarshalJSON() ([]byte, error) {
	l := trialLayout()
	v, src := reflect.New(l.typ).Elem(), reflect.ValueOf(&t).Elem()
	for i, from := range l.from {
		f, dst := src.FieldByIndex(from), v.Field(i)
		if f.Type() == dst.Type() {
			dst.Set(f)
		} else if s := f.String(); s != "" { // sandbox_id, error_message
			dst.Set(reflect.ValueOf(&s))
		}
	}
	return json.Marshal(v.Addr().Interface())
}
