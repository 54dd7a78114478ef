package daytonatest

// A Dockerfile's text: its instructions, and the words of a step as a
// shell splits them.

import (
	"errors"
	"regexp"
	"strings"
)

// instructions splits a Dockerfile into instructions: comments and blank
// lines dropped, lines ending in a backslash joined to the next.
func instructions(df string) []string {
	var out []string
	var cur strings.Builder
	for line := range strings.SplitSeq(df, "\n") {
		line = strings.TrimRight(line, "\r")
		t := strings.TrimSpace(line)
		if cur.Len() == 0 && (t == "" || strings.HasPrefix(t, "#")) {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			cur.WriteString(strings.TrimSuffix(line, `\`))
			continue
		}
		cur.WriteString(line)
		out = append(out, strings.TrimSpace(cur.String()))
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, strings.TrimSpace(cur.String()))
	}
	return out
}

// shellWords splits s into words, honouring single and double quotes and
// backslash escapes.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in, quote, esc := false, byte(0), false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case esc && c == '$':
			cur.WriteString(literalDollar)
			esc = false
		case esc:
			cur.WriteByte(c)
			esc = false
		case c == '\\' && quote != '\'':
			esc, in = true, true
		case quote != 0 && c == quote:
			quote = 0
		case quote == '\'' && c == '$':
			cur.WriteString(literalDollar)
		case quote != 0:
			cur.WriteByte(c)
		case c == '"' || c == '\'':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unterminated quote")
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

// namesPath says whether s contains p as a path: after nothing or a
// character that cannot be part of a file name in a command, and followed
// by nothing, a slash or such a character.
func namesPath(s, p string) bool {
	return regexp.MustCompile(`(^|[ \t'"=:;(])` + regexp.QuoteMeta(p) + `($|[/ \t'";:)&|>])`).MatchString(s)
}
