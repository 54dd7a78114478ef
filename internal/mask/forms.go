package mask

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// What a secret looks like once encoded: the forms a Masker masks.

// values returns the values to mask for secrets: each one and its trimmed,
// unquoted and line forms, MinLen bytes or longer, without repeats.
func values(secrets []string) []string {
	var out []string
	add := func(v string) {
		if len(v) >= MinLen && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	for _, s := range secrets {
		if len(s) < MinLen {
			continue
		}
		add(s)
		t := strings.TrimSpace(s)
		add(t)
		if len(t) >= 2 && (t[0] == '"' || t[0] == '\'') && t[len(t)-1] == t[0] {
			add(t[1 : len(t)-1])
		}
		if strings.ContainsAny(t, "\r\n") {
			for line := range strings.Lines(t) {
				add(strings.TrimSpace(line))
			}
		}
	}
	return out
}

// formsOf returns the forms of value v to mask (with repeats).
func formsOf(v string) []string {
	forms := []string{v}
	b := []byte(v)
	for skip := range 3 {
		rest := b[skip:]
		stable := 4 * len(rest) / 3
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			e := enc.EncodeToString(rest)
			forms = append(forms, e[:stable], e)
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			forms = append(forms, enc.EncodeToString(rest))
		}
	}
	h := hex.EncodeToString(b)
	forms = append(forms, h, strings.ToUpper(h), strings.ToUpper(v), strings.ToLower(v),
		unicodeEscaped(v, "%04x"), unicodeEscaped(v, "%04X"))
	q := strconv.Quote(v)
	qa := strconv.QuoteToASCII(v)
	ja := jsonASCII(v)
	var x strings.Builder
	xml.EscapeText(&x, b) // writes to a strings.Builder: cannot fail
	forms = append(forms,
		url.QueryEscape(v),
		url.PathEscape(v),
		strictURLEscape(v),
		jsonString(v, true),
		jsonString(v, false),
		ja,
		strings.ReplaceAll(ja, "/", `\/`),
		q[1:len(q)-1],
		qa[1:len(qa)-1],
		strings.ReplaceAll(v, `"`, `\"`),
		strings.ReplaceAll(v, `'`, `''`),
		html.EscapeString(v),
		x.String(),
	)
	return forms
}

// jsonString returns v as encoding/json writes it, without the quotes.
func jsonString(v string, escapeHTML bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("mask: JSON-encoding a string: %v", err)) // cannot happen
	}
	s := strings.TrimSuffix(b.String(), "\n")
	return s[1 : len(s)-1]
}

// jsonEscapes are the characters JSON escapes with a backslash and a letter.
var jsonEscapes = map[rune]string{'"': `\"`, '\\': `\\`, '\n': `\n`, '\r': `\r`, '\t': `\t`, '\b': `\b`, '\f': `\f`}

// jsonASCII returns v as a quoteless JSON string of ASCII only, as Python's
// json.dumps writes it (\uXXXX, lower-case hex, surrogate pairs).
func jsonASCII(v string) string {
	var b strings.Builder
	for _, r := range v {
		if e, ok := jsonEscapes[r]; ok {
			b.WriteString(e)
		} else if r < 0x20 || r >= 0x7f {
			b.WriteString(unicodeEscaped(string(r), "%04x"))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// unicodeEscaped returns v with every character a JSON \u escape, its hex
// digits in format ("%04x" or "%04X"): "\u0073\u006b", surrogate pairs
// beyond the BMP. JSON, JavaScript and Python read it back as v.
func unicodeEscaped(v, format string) string {
	var b strings.Builder
	for _, r := range v {
		if r > 0xffff {
			r -= 0x10000
			fmt.Fprintf(&b, `\u`+format+`\u`+format, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			continue
		}
		fmt.Fprintf(&b, `\u`+format, r)
	}
	return b.String()
}

// strictURLEscape percent-encodes every byte but RFC 3986's unreserved ones.
func strictURLEscape(v string) string {
	var b strings.Builder
	for _, c := range []byte(v) {
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
