package daytonatest

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The emulator builds a snapshot's Dockerfile itself, on this machine:
// FROM (one stage), ENV, WORKDIR and RUN, with CMD and ENTRYPOINT
// accepted and ignored. What Docker would make of the text (continuation
// lines, comments, quotes, escapes, $VAR) follows BuildKit's Dockerfile
// frontend (frontend/dockerfile/parser and shell/lex.go).

// dockerInstruction is one instruction of a Dockerfile.
type dockerInstruction struct {
	line int    // where it starts, from 1
	cmd  string // upper case: FROM, RUN, ...
	args string // the rest, continuation lines joined
}

// dockerInstructions are the instructions Docker knows; a Dockerfile
// naming another fails to parse.
var dockerInstructions = map[string]bool{
	"ADD": true, "ARG": true, "CMD": true, "COPY": true, "ENTRYPOINT": true, "ENV": true,
	"EXPOSE": true, "FROM": true, "HEALTHCHECK": true, "LABEL": true, "MAINTAINER": true,
	"ONBUILD": true, "RUN": true, "SHELL": true, "STOPSIGNAL": true, "USER": true,
	"VOLUME": true, "WORKDIR": true,
}

// notEmulated is a Dockerfile Docker would build that the emulator does
// not: the snapshot ends build_failed with this reason.
type notEmulated struct{ msg string }

func (e *notEmulated) Error() string { return "daytonatest: " + e.msg }

// parseDockerfile splits a Dockerfile into its instructions as Docker's
// parser does: blank lines and comment lines are skipped (inside a
// continuation too), a line ending in a backslash goes on on the next one
// (the backslash and the newline removed), and the first word is the
// instruction, in any case. An unknown instruction is BuildKit's parse
// error.
func parseDockerfile(content string) ([]dockerInstruction, error) {
	var out []dockerInstruction
	var cur strings.Builder
	start, inCont := 0, false
	emit := func() error {
		text := strings.TrimSpace(cur.String())
		cur.Reset()
		word, args := text, ""
		if i := strings.IndexFunc(text, unicode.IsSpace); i >= 0 {
			word, args = text[:i], text[i:]
		}
		cmd := strings.ToUpper(word)
		if !dockerInstructions[cmd] {
			return fmt.Errorf("dockerfile parse error on line %d: unknown instruction: %s", start, word)
		}
		out = append(out, dockerInstruction{line: start, cmd: cmd, args: strings.TrimSpace(args)})
		return nil
	}
	for i, raw := range strings.Split(strings.ReplaceAll(content, "\r\n", "\n"), "\n") {
		t := strings.TrimSpace(raw)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if !inCont {
			start = i + 1
		}
		body := strings.TrimRightFunc(raw, unicode.IsSpace)
		if strings.HasSuffix(body, `\`) {
			cur.WriteString(strings.TrimSuffix(body, `\`))
			inCont = true
			continue
		}
		cur.WriteString(body)
		inCont = false
		if err := emit(); err != nil {
			return nil, err
		}
	}
	if inCont {
		if err := emit(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// dockerWords splits an instruction's arguments into words as BuildKit's
// parseWords does: whitespace outside quotes separates them; quotes and
// escapes stay in the words, for dockerWord to process.
func dockerWords(rest string) []string {
	const (
		inSpaces = iota
		inWord
		inQuote
	)
	var words []string
	phase, word, quote, blankOK := inSpaces, "", rune(0), false
	for pos := 0; pos <= len(rest); {
		ch, width := rune(0), 0
		if pos < len(rest) {
			ch, width = utf8.DecodeRuneInString(rest[pos:])
		}
		if phase == inSpaces {
			if pos == len(rest) {
				break
			}
			if unicode.IsSpace(ch) {
				pos += width
				continue
			}
			phase = inWord
		}
		if pos == len(rest) {
			if blankOK || word != "" {
				words = append(words, word)
			}
			break
		}
		switch phase {
		case inWord:
			if unicode.IsSpace(ch) {
				phase = inSpaces
				if blankOK || word != "" {
					words = append(words, word)
				}
				word, blankOK = "", false
				pos += width
				continue
			}
			if ch == '\'' || ch == '"' {
				quote, blankOK, phase = ch, true, inQuote
			}
			if ch == '\\' {
				if pos+width == len(rest) {
					pos += width
					continue
				}
				word += string(ch)
				pos += width
				ch, width = utf8.DecodeRuneInString(rest[pos:])
			}
			word += string(ch)
		case inQuote:
			if ch == quote {
				phase = inWord
			}
			if ch == '\\' && quote != '\'' {
				if pos+width == len(rest) {
					phase = inWord
					pos += width
					continue
				}
				word += string(ch)
				pos += width
				ch, width = utf8.DecodeRuneInString(rest[pos:])
			}
			word += string(ch)
		}
		pos += width
	}
	return words
}

// dockerWord is what Docker makes of a word of ENV or WORKDIR (BuildKit's
// shell.Lex.ProcessWord with the default escape): quotes removed, '...'
// literal, "..." literal but for $ and the escapes \" \$ \\, a backslash
// outside quotes taking the next character literally, and $NAME, ${NAME},
// ${NAME:-word}, ${NAME-word}, ${NAME:+word}, ${NAME+word},
// ${NAME:?word}, ${NAME?word} expanded from env (unset is empty). The
// pattern forms (${NAME#...}, %, /) are not emulated.
func dockerWord(word string, env map[string]string) (string, error) {
	lx := &wordLexer{s: []rune(word), env: env}
	return lx.until(-1)
}

type wordLexer struct {
	s   []rune
	i   int
	env map[string]string
}

const eof = -1

func (lx *wordLexer) peek() rune {
	if lx.i >= len(lx.s) {
		return eof
	}
	return lx.s[lx.i]
}

func (lx *wordLexer) next() rune {
	ch := lx.peek()
	if ch != eof {
		lx.i++
	}
	return ch
}

// until processes up to stop (consumed), or to the end when stop is eof.
func (lx *wordLexer) until(stop rune) (string, error) {
	var b strings.Builder
	for lx.peek() != eof {
		ch := lx.peek()
		if stop != eof && ch == stop {
			lx.next()
			return b.String(), nil
		}
		switch ch {
		case '$':
			v, err := lx.dollar()
			if err != nil {
				return "", err
			}
			b.WriteString(v)
		case '\'':
			v, err := lx.single()
			if err != nil {
				return "", err
			}
			b.WriteString(v)
		case '"':
			v, err := lx.double()
			if err != nil {
				return "", err
			}
			b.WriteString(v)
		default:
			lx.next()
			if ch == '\\' {
				if ch = lx.next(); ch == eof {
					continue
				}
			}
			b.WriteRune(ch)
		}
	}
	if stop != eof {
		return "", fmt.Errorf("unexpected end of statement while looking for matching %c", stop)
	}
	return b.String(), nil
}

func (lx *wordLexer) single() (string, error) {
	lx.next()
	var b strings.Builder
	for {
		switch ch := lx.next(); ch {
		case eof:
			return "", errors.New("unexpected end of statement while looking for matching single-quote")
		case '\'':
			return b.String(), nil
		default:
			b.WriteRune(ch)
		}
	}
}

func (lx *wordLexer) double() (string, error) {
	lx.next()
	var b strings.Builder
	for {
		switch lx.peek() {
		case eof:
			return "", errors.New("unexpected end of statement while looking for matching double-quote")
		case '"':
			lx.next()
			return b.String(), nil
		case '$':
			v, err := lx.dollar()
			if err != nil {
				return "", err
			}
			b.WriteString(v)
		default:
			ch := lx.next()
			if ch == '\\' {
				switch lx.peek() {
				case eof:
					continue
				case '"', '$', '\\':
					ch = lx.next()
				}
			}
			b.WriteRune(ch)
		}
	}
}

func (lx *wordLexer) dollar() (string, error) {
	lx.next()
	if lx.peek() != '{' {
		name := lx.name()
		if name == "" {
			return "$", nil
		}
		return lx.env[name], nil
	}
	lx.next()
	switch lx.peek() {
	case eof:
		return "", errors.New("syntax error: missing '}'")
	case '{', '}', ':':
		return "", errors.New("syntax error: bad substitution")
	}
	name := lx.name()
	value, set := lx.env[name]
	ch := lx.next()
	if ch == '}' {
		return value, nil
	}
	nullIsUnset := false
	if ch == ':' {
		nullIsUnset = true
		ch = lx.next()
	}
	switch ch {
	case '-', '+', '?':
	case '#', '%', '/':
		return "", &notEmulated{fmt.Sprintf("the substitution ${%s%c...} is not emulated", name, ch)}
	default:
		return "", fmt.Errorf("unsupported modifier (%c) in substitution", ch)
	}
	word, err := lx.until('}')
	if err != nil {
		return "", err
	}
	empty := !set || nullIsUnset && value == ""
	switch ch {
	case '-':
		if empty {
			return word, nil
		}
		return value, nil
	case '+':
		if empty {
			return "", nil
		}
		return word, nil
	}
	if empty {
		return "", fmt.Errorf("%s: %s", name, word)
	}
	return value, nil
}

// name reads a variable's name: letters, digits and '_', or digits
// alone, or one of the shell's special parameters.
func (lx *wordLexer) name() string {
	var b strings.Builder
	for lx.peek() != eof {
		ch := lx.peek()
		if b.Len() == 0 && unicode.IsDigit(ch) {
			for unicode.IsDigit(lx.peek()) {
				b.WriteRune(lx.next())
			}
			return b.String()
		}
		if b.Len() == 0 && strings.ContainsRune("@*#?-$!0", ch) {
			return string(lx.next())
		}
		if !unicode.IsLetter(ch) && !unicode.IsDigit(ch) && ch != '_' {
			break
		}
		b.WriteRune(lx.next())
	}
	return b.String()
}

// envPairs are the variables of an ENV instruction, in order, before
// expansion, as BuildKit's parseNameVal reads them: "name=value ..." or
// the old "name value" (the whole rest is the value).
func envPairs(args string) ([][2]string, error) {
	words := dockerWords(args)
	if len(words) == 0 {
		return nil, errors.New("ENV requires at least one argument")
	}
	if !strings.Contains(words[0], "=") {
		parts := regexp.MustCompile(`\s+`).Split(strings.TrimSpace(args), 2)
		if len(parts) < 2 {
			return nil, errors.New("ENV must have two arguments")
		}
		return [][2]string{{parts[0], parts[1]}}, nil
	}
	var out [][2]string
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			return nil, fmt.Errorf("Syntax error - can't find = in %q. Must be of the form: name=value", w)
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

// runArgv is the command a RUN instruction runs: its JSON form as given,
// or its shell form through /bin/sh -c.
func runArgv(args string) []string {
	if strings.HasPrefix(args, "[") {
		var argv []string
		if json.Unmarshal([]byte(args), &argv) == nil && len(argv) > 0 {
			return argv
		}
	}
	return []string{"/bin/sh", "-c", args}
}

// entrypointOf is the entrypoint the API records for a snapshot built
// from dockerfile (snapshot.service.ts getEntrypointFromDockerfile): the
// last ENTRYPOINT line's JSON array, or its text without quotes, or
// ["sleep", "infinity"].
func entrypointOf(dockerfile string) []string {
	m := regexp.MustCompile(`ENTRYPOINT\s+(.*)`).FindAllStringSubmatch(dockerfile, -1)
	if len(m) == 0 {
		return []string{"sleep", "infinity"}
	}
	raw := strings.TrimSpace(m[len(m)-1][1])
	var argv []string
	if err := json.Unmarshal([]byte(raw), &argv); err == nil {
		return argv
	}
	return []string{strings.NewReplacer(`"`, "", `'`, "").Replace(raw)}
}
