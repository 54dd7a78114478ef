package text

import (
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Align is a table column's alignment: numbers right, words left.
type Align int

// The alignments.
const (
	Left Align = iota
	Right
)

// Table draws rows under header with tablewriter, forge's one table style:
// light box borders on a terminal (tty), else plain columns aligned with two
// spaces. A column empty in every row is left out; TrimLines removes the
// last column's padding.
func Table(w io.Writer, header []string, rows [][]string, align []Align, tty bool) error {
	aligns := make([]tw.Align, len(align))
	for i, a := range align {
		aligns[i] = tw.AlignLeft
		if a == Right {
			aligns[i] = tw.AlignRight
		}
	}
	rendition := tw.Rendition{Symbols: tw.NewSymbols(tw.StyleLight)}
	padding := tw.PaddingDefault
	if !tty {
		rendition = tw.Rendition{
			Borders:  tw.BorderNone,
			Symbols:  tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{Separators: tw.SeparatorsNone, Lines: tw.LinesNone},
		}
		padding = tw.Padding{Left: "", Right: "  ", Overwrite: true}
	}
	cell := tw.CellConfig{
		Formatting: tw.CellFormatting{AutoWrap: tw.WrapNone, AutoFormat: tw.Off},
		Padding:    tw.CellPadding{Global: padding},
		Alignment:  tw.CellAlignment{PerColumn: aligns},
	}
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewBlueprint(rendition)),
		tablewriter.WithHeaderConfig(cell),
		tablewriter.WithRowConfig(cell),
		tablewriter.WithBehavior(tw.Behavior{AutoHide: tw.On, TrimSpace: tw.On}),
	)
	t.Header(header)
	if err := t.Bulk(rows); err != nil {
		return err
	}
	return t.Render()
}

// MarkdownRule is the line under a Markdown table's header that aligns its
// columns: "|:---|---:|".
func MarkdownRule(align []Align) string {
	rule := "|"
	for _, a := range align {
		if a == Right {
			rule += "---:|"
		} else {
			rule += ":---|"
		}
	}
	return rule
}
