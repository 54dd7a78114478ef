package yamlcheck

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// TabMsg is what a tab in the indentation is told.
const TabMsg = "a tab in the indentation: YAML indents with spaces"

const (
	// maxSearch bounds the text whose broken line Syntax looks for
	// itself, parsing it a few dozen times; past it, yaml.v3's line is
	// told.
	maxSearch = 4 << 20
	// maxTabs is how many lines with a tab are told.
	maxTabs = 20
)

// Syntax returns the problems of err, yaml.Unmarshal's error for data (a
// file named file), placed at the line where data stops being YAML: yaml.v3
// names the line a construct began on, or the one before, and says "found
// character that cannot start any token" of a tab. A tab in the
// indentation is told as one, on every line that has one from there on.
func Syntax(file string, data []byte, err error) []error {
	if err == nil {
		return nil
	}
	if errors.As(err, new(*yaml.TypeError)) {
		return InFile(err, file, Plain)
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	sub := lineRe.FindStringSubmatch(err.Error())
	if sub != nil {
		msg = sub[2]
	}
	lines := splitLines(data)
	var line int
	if len(data) <= maxSearch {
		line = brokenLine(data, lines)
	} else if sub != nil {
		line, _ = strconv.Atoi(sub[1])
		line = min(max(line, 1), len(lines))
	}
	if line == 0 {
		return []error{&Error{File: file, Msg: "not valid YAML: " + msg}}
	}
	var out []error
	tabs := 0
	for l := line; l <= len(lines); l++ {
		if col := indentTab(lines[l-1]); col > 0 {
			if tabs++; tabs <= maxTabs {
				out = append(out, &Error{File: file, Line: l, Col: col, Msg: TabMsg})
			}
		}
	}
	if len(out) > 0 && (out[0].(*Error).Line == line || strings.Contains(msg, "tab")) {
		if tabs > maxTabs {
			out = append(out, &Error{File: file, Msg: fmt.Sprintf("and %d more lines with a tab in the indentation", tabs-maxTabs)})
		}
		return out
	}
	text := lines[line-1]
	e := &Error{File: file, Line: line, Col: firstCol(text), Msg: "not valid YAML: " + syntaxWords(msg)}
	if col, what := unclosed(data, lines, line); col > 0 {
		e.Col, e.Msg = col, "not valid YAML: "+what
	}
	return []error{e}
}

// splitLines are data's lines, without their ends.
func splitLines(data []byte) []string {
	s := strings.TrimSuffix(string(data), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// brokenLine is the first line from which no longer prefix of data parses
// (0 when every prefix does): a syntax error stays in every text that
// holds it, while a prefix may fail only because it ends inside a quoted
// value or a flow collection, which the next lines close.
func brokenLine(data []byte, lines []string) int {
	ends := make([]int, len(lines)+1) // ends[k]: the length of the first k lines
	off := 0
	for i, l := range lines {
		off += len(l) + 1
		ends[i+1] = min(off, len(data))
	}
	parses := func(k int) bool {
		var n yaml.Node
		return yaml.Unmarshal(data[:ends[k]], &n) == nil
	}
	last := len(lines)
	if last == 0 || parses(last) {
		return 0
	}
	// Find an ok prefix, going back further each time, then the first
	// line that breaks it between there and the last broken prefix.
	ok, broken := -1, last
	for step := 1; ok < 0; step *= 2 {
		k := max(last-step, 0)
		if k == 0 || parses(k) {
			ok = k
		} else {
			broken = k
		}
	}
	for broken-ok > 1 {
		mid := (ok + broken) / 2
		if parses(mid) {
			ok = mid
		} else {
			broken = mid
		}
	}
	return broken
}

// indentTab is the column of the first tab in line's indentation, 0 when
// it has none.
func indentTab(line string) int {
	rest := strings.TrimLeft(line, " ")
	if !strings.HasPrefix(rest, "\t") {
		return 0
	}
	return len(line) - len(rest) + 1 // the spaces before it are a byte each
}

// firstCol is the column of line's first character that is not a space.
func firstCol(line string) int {
	for i, r := range line {
		if r != ' ' && r != '\t' {
			return utf8.RuneCountInString(line[:i]) + 1
		}
	}
	return 1
}

// syntaxWords says yaml.v3's syntax errors in words.
func syntaxWords(msg string) string {
	for _, w := range []struct{ yaml, words string }{
		{"mapping values are not allowed in this context", `a "key: value" where it cannot start: check the indentation, or quote a value that holds ": "`},
		{"did not find expected key", "this line is not indented like the keys around it"},
		{"could not find expected ':'", `want "key: value" here`},
		{"did not find expected '-' indicator", "this line is not indented like the list's items"},
		{"block sequence entries are not allowed in this context", `a list item ("- ") where it cannot start: put the list on its own lines, under its key`},
		{"found character that cannot start any token", "this character cannot start a value (@ and ` are reserved): quote the value"},
	} {
		if strings.HasPrefix(msg, w.yaml) {
			return w.words
		}
	}
	return msg
}

// unclosed finds a quote, [ or { opened on line (of lines, which are
// data's) that nothing after it closes: its column and what to say of it.
func unclosed(data []byte, lines []string, line int) (int, string) {
	start := 0
	for _, l := range lines[:line-1] {
		start += len(l) + 1
	}
	rest := data[start:]
	quote, flow := scanOpen(rest)
	onLine := func(at int) int {
		if at >= len(lines[line-1]) {
			return 0
		}
		return utf8.RuneCount(rest[:at]) + 1
	}
	if quote != nil {
		if col := onLine(quote.at); col > 0 {
			return col, "this quote opens a value that is never closed: end it with " + string(quote.ch)
		}
	}
	if len(flow) > 0 {
		if col := onLine(flow[0].at); col > 0 {
			closer := map[byte]string{'[': "]", '{': "}"}[flow[0].ch]
			return col, "this " + string(flow[0].ch) + " opens a " + map[byte]string{'[': "list", '{': "mapping"}[flow[0].ch] +
				" that is never closed: end it with " + closer
		}
	}
	return 0, ""
}

// opening is a quote, [ or { at an offset.
type opening struct {
	at int
	ch byte
}

// scanOpen reads rest, YAML, and returns the quote it leaves open, if any,
// and the [ and { it leaves open, outermost first.
func scanOpen(rest []byte) (*opening, []opening) {
	var flow []opening
	var quote *opening
	valueStart := true // a quote or bracket here opens a value
	indicator := false // the last character was a "- " or "? " at a value's start
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if quote != nil {
			switch {
			case quote.ch == '"' && c == '\\':
				i++
			case c == '\'' && quote.ch == '\'' && i+1 < len(rest) && rest[i+1] == '\'':
				i++
			case c == quote.ch:
				quote, valueStart = nil, false
			}
			continue
		}
		switch c {
		case '\n':
			valueStart = true
			continue
		case ' ', '\t':
			if i > 0 {
				p := rest[i-1]
				valueStart = valueStart || p == ':' || (p == '-' || p == '?') && indicator
			}
			continue
		case '#':
			if i == 0 || strings.IndexByte(" \t\n", rest[i-1]) >= 0 {
				for i+1 < len(rest) && rest[i+1] != '\n' {
					i++
				}
				continue
			}
		case '"', '\'':
			if valueStart {
				quote = &opening{i, c}
				continue
			}
		case '[', '{':
			if valueStart {
				flow = append(flow, opening{i, c})
				continue
			}
		case ']', '}':
			if len(flow) > 0 {
				flow = flow[:len(flow)-1]
			}
		case ',':
			if len(flow) > 0 {
				valueStart = true
				continue
			}
		}
		indicator = (c == '-' || c == '?') && valueStart
		valueStart = false
	}
	return quote, flow
}
