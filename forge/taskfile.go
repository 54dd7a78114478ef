package forge

// Tasks files: JSONL, CSV and YAML read into tasks, every bad line named
// with its file, line and field.

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/internal/yamlcheck"
	"gopkg.in/yaml.v3"
)

// maxTasksFileBytes bounds what a tasks_file may hold.
const maxTasksFileBytes = 256 << 20

// readTasksFile reads a suite's tasks from data, a file named name, by its
// extension (docs/manifest.md, "tasks"). Every problem names the file, the
// line and the field.
func readTasksFile(name string, data []byte) ([]Task, []error) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".jsonl", ".ndjson":
		return readJSONL(name, data)
	case ".csv":
		return readCSV(name, data)
	case ".yaml", ".yml":
		return readYAMLTasks(name, data)
	}
	return nil, []error{&Error{File: name, Msg: "tasks_file must be .jsonl, .csv, .yaml or .yml"}}
}

func readJSONL(name string, data []byte) ([]Task, []error) {
	var tasks []Task
	var errs []error
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxTasksFileBytes)
	for line := 1; sc.Scan(); line++ {
		raw := sc.Bytes()
		text := bytes.TrimSpace(raw)
		if len(text) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.UseNumber()
		var fields map[string]any
		if err := dec.Decode(&fields); err != nil || fields == nil || dec.More() {
			lead := len(raw) - len(bytes.TrimLeft(raw, " \t"))
			errs = append(errs, &Error{File: name, Line: line, Msg: "not a JSON object: " + jsonLineError(text, lead, dec, err)})
			continue
		}
		tasks = append(tasks, lineTask(name, line, fields))
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, &Error{File: name, Msg: err.Error()})
	}
	return tasks, errs
}

// lineTask is the task of a JSONL or CSV file's line: its fields, and a
// node of them at the line, which the tasks' one decoder reads.
func lineTask(file string, line int, fields map[string]any) Task {
	return Task{Fields: fields, where: taskPos{file: file, node: valueNode(fields, line)}}
}

// valueNode is a JSON value (a JSONL or CSV task's) as a YAML node, every
// node of it at line: numbers as they are written, keys in order.
func valueNode(v any, line int) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Line: line}
	switch v := v.(type) {
	case map[string]any:
		n.Kind, n.Tag = yaml.MappingNode, "!!map"
		for _, k := range slices.Sorted(maps.Keys(v)) {
			n.Content = append(n.Content, valueNode(k, line), valueNode(v[k], line))
		}
	case []any:
		n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
		for _, e := range v {
			n.Content = append(n.Content, valueNode(e, line))
		}
	case string:
		n.Tag, n.Value = "!!str", v
	case json.Number:
		n.Value = v.String() // its tag is what YAML reads it as
	case bool:
		n.Tag, n.Value = "!!bool", strconv.FormatBool(v)
	default:
		n.Tag, n.Value = "!!null", "null"
	}
	return n
}

// jsonLineError says why text, a line of a JSONL file after lead blanks,
// is not a task: err is dec's, nil when the object decoded but was null or
// had more after it. The column is in the words, after the line: scripts
// read "file:line: not a JSON object".
func jsonLineError(text []byte, lead int, dec *json.Decoder, err error) string {
	col := func(off int64) int { return lead + utf8.RuneCount(text[:min(int(off), len(text))]) + 1 }
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil && dec.More():
		return fmt.Sprintf("column %d: more after the object: one task a line", col(dec.InputOffset()))
	case err == nil, errors.As(err, &typ) && typ.Field == "":
		return yamlcheck.Got(valueNode(firstJSON(text), 0)) + `: a task is {"id": ...}`
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Sprintf("column %d: the object is not closed: a task is one line, closed with }", col(int64(len(text))))
	case errors.As(err, &syn):
		at := min(max(int(syn.Offset)-1, 0), len(text)-1)
		return fmt.Sprintf("column %d: %s", col(int64(at)), jsonWords(syn.Error(), text[at:]))
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// jsonWants says what encoding/json looked for, by the end of its syntax
// errors.
var jsonWants = []struct{ json, want string }{
	{"looking for beginning of object key string", `a key in double quotes ("id")`},
	{"looking for beginning of value", `a value: text in double quotes, a number, true, false, null, [...] or {...}`},
	{"after object key:value pair", ", or } after a value"},
	{"after object key", ": after a key"},
	{"after array element", ", or ] after an item"},
	{"in string literal", `text without control characters: write a tab as \t`},
}

// jsonWords says a syntax error of encoding/json in words: what it found
// (at the start of rest), what it wanted.
func jsonWords(msg string, rest []byte) string {
	msg = strings.TrimPrefix(msg, "json: ")
	for _, w := range jsonWants {
		if strings.HasSuffix(msg, w.json) {
			r, _ := utf8.DecodeRune(rest)
			found := "`" + string(r) + "`"
			if !unicode.IsPrint(r) {
				found = fmt.Sprintf("%q", r)
			}
			s := fmt.Sprintf("found %s, want %s", found, w.want)
			if r == '\'' {
				s += `; JSON quotes with ", not '`
			}
			return s
		}
	}
	return msg
}

// firstJSON is the JSON value text starts with, as far as it decodes.
func firstJSON(text []byte) any {
	var v any
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return string(text)
	}
	return v
}

func readCSV(name string, data []byte) ([]Task, []error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1 // counted here, to say how many
	header, err := r.Read()
	if err == io.EOF {
		return nil, nil
	}
	if err != nil {
		return nil, []error{csvError(name, data, err)}
	}
	var errs []error
	seen := map[string]int{}
	for i, h := range header {
		header[i] = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		_, col := r.FieldPos(i)
		switch j, dup := seen[header[i]]; {
		case header[i] == "":
			errs = append(errs, &Error{File: name, Line: 1, Col: col, Msg: fmt.Sprintf("column %d: the header is empty: name the field", i+1)})
		case dup:
			errs = append(errs, &Error{File: name, Line: 1, Col: col, Msg: fmt.Sprintf("column %d: header %q repeats column %d's", i+1, header[i], j+1)})
		}
		seen[header[i]] = i
	}
	if len(errs) > 0 {
		return nil, errs
	}
	var tasks []Task
	for {
		row, err := r.Read()
		if err == io.EOF {
			return tasks, errs
		}
		if err != nil {
			errs = append(errs, csvError(name, data, err))
			continue
		}
		line, _ := r.FieldPos(0)
		if len(row) != len(header) {
			errs = append(errs, &Error{File: name, Line: line,
				Msg: fmt.Sprintf("%d %s, the header has %d", len(row), text.Plural(len(row), "field", "fields"), len(header))})
			continue
		}
		fields := map[string]any{}
		for i, v := range row {
			if v == "" {
				continue
			}
			if header[i] == "files" {
				var files []any
				for _, f := range strings.Split(v, ";") {
					if f = strings.TrimSpace(f); f != "" {
						files = append(files, f)
					}
				}
				fields["files"] = files
				continue
			}
			fields[header[i]] = v
		}
		tasks = append(tasks, lineTask(name, line, fields))
	}
}

// csvError says a CSV parse error of data in words: an unclosed quote at
// the line where it opens, not where the file ends.
func csvError(name string, data []byte, err error) error {
	var pe *csv.ParseError
	if !errors.As(err, &pe) {
		return &Error{File: name, Msg: err.Error()}
	}
	e := &Error{File: name, Line: pe.Line, Col: pe.Column}
	switch {
	case errors.Is(pe.Err, csv.ErrQuote):
		if line, col, ok := openQuote(data, pe.StartLine); ok {
			e.Line, e.Col = line, col
			e.Msg = `this quote opens a field that is never closed: end the field with " (and write a quote inside it as "")`
		} else {
			e.Msg = `text after a quoted field's closing quote: write a quote inside a field as ""`
		}
	case errors.Is(pe.Err, csv.ErrBareQuote):
		e.Msg = `a quote inside a field that does not start with one: quote the whole field and write the quote as "" (e.g. "say ""hi""")`
	default:
		e.Msg = pe.Err.Error()
	}
	return e
}

// openQuote finds the quote that opens a field of the record starting at
// line of data and is never closed: its line and column.
func openQuote(data []byte, line int) (int, int, bool) {
	i := 0
	for l := 1; l < line && i < len(data); i++ {
		if data[i] == '\n' {
			l++
		}
	}
	lineStart := i
	atField := true
	open, openLine, openCol := false, 0, 0
	for ; i < len(data); i++ {
		c := data[i]
		switch {
		case open && c == '"' && i+1 < len(data) && data[i+1] == '"':
			i++
		case open && c == '"':
			open = false
		case open:
			if c == '\n' {
				line++
				lineStart = i + 1
			}
		case c == '"' && atField:
			open, openLine, openCol = true, line, utf8.RuneCount(data[lineStart:i])+1
		case c == '\n':
			return 0, 0, false // the record ends with every quote closed
		}
		atField = c == ','
	}
	return openLine, openCol, open
}

func readYAMLTasks(name string, data []byte) ([]Task, []error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlcheck.Syntax(name, data, err)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, nil
	}
	list := root.Content[0]
	if list.Kind != yaml.SequenceNode {
		return nil, []error{&Error{File: name, Line: list.Line, Col: list.Column,
			Msg: "a tasks file in YAML is a list of tasks, not a " + yamlcheck.KindName(list)}}
	}
	var tasks []Task
	var errs []error
	for i, n := range list.Content {
		t, err := yamlTask(name, fmt.Sprintf("[%d]", i), n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		tasks = append(tasks, t)
	}
	return tasks, errs
}

// yamlTask reads the task at n, whose key path is path.
func yamlTask(file, path string, n *yaml.Node) (Task, error) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	where := taskPos{file: file, node: n, path: path}
	if n.Kind != yaml.MappingNode {
		return Task{}, where.validator().place("a task is a mapping with id: and its fields, not a " + yamlcheck.KindName(n))
	}
	budget := maxTaskValues
	v, err := nodeValue(n, &budget)
	if err != nil {
		return Task{}, where.validator().place(err.Error())
	}
	return Task{Fields: v.(map[string]any), where: where}, nil
}

// maxTaskValues bounds the values of one YAML task, aliases expanded: a
// few lines of aliases can stand for billions.
const maxTaskValues = 1 << 20

// nodeValue is the JSON value of a YAML node: numbers as json.Number in
// their written form where JSON can carry it; it counts the values down
// from *budget.
func nodeValue(n *yaml.Node, budget *int) (any, error) {
	if *budget--; *budget < 0 {
		return nil, fmt.Errorf("its aliases expand to more than %d values", maxTaskValues)
	}
	switch n.Kind {
	case yaml.AliasNode:
		return nodeValue(n.Alias, budget)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Value == "<<" {
				return nil, errors.New("merge keys (<<) are not supported in tasks")
			}
			v, err := nodeValue(n.Content[i+1], budget)
			if err != nil {
				return nil, err
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, err := nodeValue(c, budget)
			if err != nil {
				return nil, err
			}
			l[i] = v
		}
		return l, nil
	}
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		err := n.Decode(&b)
		return b, err
	case "!!int", "!!float":
		if json.Valid([]byte(n.Value)) {
			return json.Number(n.Value), nil
		}
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, err
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return n.Value, nil
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	}
	return n.Value, nil
}
