// Package text holds the small string clean-ups every report format needs
// for bytes a candidate printed: invalid UTF-8, terminal escape sequences,
// and caps that cut on a rune boundary and say so.
package text

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// StripANSI removes terminal escape sequences (CSI such as colours, and OSC
// such as titles and hyperlinks) so captured output reads as plain text.
// A lone ESC is kept for the caller's clean-up to deal with.
func StripANSI(s string) string {
	if !strings.Contains(s, "\x1b") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != 0x1b || i+1 >= len(s) {
			b.WriteByte(s[i])
			i++
			continue
		}
		switch s[i+1] {
		case '[': // CSI: parameters and intermediates, then a final byte 0x40–0x7e
			j := i + 2
			for j < len(s) && s[j] >= 0x20 && s[j] <= 0x3f {
				j++
			}
			if j < len(s) && s[j] >= 0x40 && s[j] <= 0x7e {
				i = j + 1
				continue
			}
		case ']': // OSC: up to BEL or ESC \
			if end := strings.IndexAny(s[i+2:], "\x07\x1b"); end >= 0 {
				j := i + 2 + end
				if s[j] == 0x07 {
					i = j + 1
					continue
				}
				if j+1 < len(s) && s[j+1] == '\\' {
					i = j + 2
					continue
				}
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// Cap returns at most max bytes of s, cut on a rune boundary, and how many
// bytes it dropped.
func Cap(s string, max int) (string, int) {
	if max < 0 {
		max = 0
	}
	if len(s) <= max {
		return s, 0
	}
	cut := max
	for back := 0; cut > 0 && back < utf8.UTFMax && !utf8.RuneStart(s[cut]); back++ {
		cut--
	}
	return s[:cut], len(s) - cut
}

// Output prepares captured output for display: escape sequences stripped,
// capped at max bytes with a note saying how much was cut, and invalid
// UTF-8 replaced by U+FFFD.
func Output(s string, max int) string {
	kept, dropped := Cap(StripANSI(s), max)
	kept = strings.ToValidUTF8(kept, "\uFFFD")
	if dropped > 0 {
		kept += fmt.Sprintf("\n… [%d more bytes not shown]", dropped)
	}
	return kept
}

// XML makes s safe for XML 1.0 character data and attributes: invalid UTF-8
// and the characters XML cannot carry (NUL, most control characters) become
// U+FFFD.
func XML(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexFunc(s, func(r rune) bool { return !xmlChar(r) }) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if xmlChar(r) {
			return r
		}
		return '\uFFFD'
	}, s)
}

func xmlChar(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' ||
		(r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
}
