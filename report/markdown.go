package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// Markdown writes the standings as GitHub-flavoured Markdown, for a PR comment
// or $GITHUB_STEP_SUMMARY. Text from candidates is escaped so it cannot break
// the table or inject markup.
func Markdown(w io.Writer, rec *record.Record, opts Options) error {
	opts, err := prepare(rec, opts)
	if err != nil {
		return err
	}
	cs := candidates(rec)
	var b strings.Builder

	fmt.Fprintf(&b, "### forge run %s\n\n", mdCode(rec.RunID))
	if obj := text.OneLine(rec.Objective); obj != "" {
		fmt.Fprintf(&b, "**Objective:** %s  \n", text.Markdown(text.Shorten(obj, 200)))
	}
	fmt.Fprintf(&b, "%s\n\n", text.Markdown(runFacts(rec, cs)))

	if len(cs) == 0 {
		b.WriteString("No results.\n\n")
	} else {
		cols := columns(rec)
		header, align := make([]string, len(cols)), make([]text.Align, len(cols))
		for i, col := range cols {
			header[i], align[i] = col.header, col.align
		}
		rows := mdEscaped(cells(cols, cs))
		for r, c := range cs {
			for i, col := range cols {
				switch col.header {
				case colCandidate:
					if c.winner {
						rows[r][i] = "**" + rows[r][i] + "**"
					}
				case colStatus:
					rows[r][i] = map[health]string{healthOK: "✅ ", healthPartial: "⚠️ ", healthFailed: "❌ "}[c.health()] + rows[r][i]
				}
			}
		}
		mdTable(&b, header, rows, align)
		b.WriteString("\n")
	}

	line := text.Markdown(winnerLine(rec, cs))
	if rec.Winner != nil {
		line = "🏆 **" + line + "**"
	}
	b.WriteString(line + "\n")
	if rec.Interrupted {
		b.WriteString("\n> [!WARNING]\n> The run was interrupted: these are partial results.\n")
	}
	if br := rec.BudgetReached; br != nil {
		fmt.Fprintf(&b, "\n> [!WARNING]\n> %s.\n", text.Markdown(br.String()))
	}
	writeMarkdownCost(&b, cs)
	for _, n := range rec.NotRun {
		fmt.Fprintf(&b, "\n> [!WARNING]\n> %s did not run: %s.\n", mdCode(n.CandidateID), text.Markdown(text.OneLine(n.Reason)))
	}
	if l := retriedLine(rec); l != "" {
		fmt.Fprintf(&b, "\n> [!NOTE]\n> %s.\n", text.Markdown(l))
	}
	if len(rec.UndeletedSandboxes) > 0 {
		ids := make([]string, len(rec.UndeletedSandboxes))
		for i, id := range rec.UndeletedSandboxes {
			ids[i] = mdCode(id)
		}
		fmt.Fprintf(&b, "\n> [!CAUTION]\n> %d sandbox(es) could not be deleted: %s. Delete them with `forge gc`.\n",
			len(ids), strings.Join(ids, ", "))
	}
	writeMarkdownMatrix(&b, rec)
	writeFailures(&b, cs, opts)
	writeWrong(&b, cs)

	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write Markdown report: %w", err)
	}
	return nil
}

// Limits that keep a large run's Markdown readable.
const (
	mdMaxFailures        = 50
	mdMaxFailuresPerKind = 5
	mdMaxFailuresEach    = 15
	mdMaxTasks           = 100
)

// writeFailures lists the failed trials in a collapsed block: every one, or
// a few of each kind per candidate beyond mdMaxFailures.
func writeFailures(b *strings.Builder, cs []candidate, opts Options) {
	n := 0
	for _, c := range cs {
		n += len(c.results) - c.succeeded
	}
	if n == 0 {
		return
	}
	fmt.Fprintf(b, "\n<details><summary>%d %s</summary>\n\n", n, text.Plural(n, "failure", "failures"))
	listed := 0
	for _, c := range cs {
		rs := c.results
		if n > mdMaxFailures {
			rs = shownFailures(rs, mdMaxFailuresPerKind, mdMaxFailuresEach)
		}
		for _, r := range rs {
			if r.Success {
				continue
			}
			listed++
			name := runner.TrialName(c.standing.CandidateID, r.TaskID, r.Trial, c.multi)
			fmt.Fprintf(b, "- **%s** — %s", text.Markdown(name), text.Markdown(KindLabel(r.ErrorKind)))
			if msg := text.OneLine(r.ErrorMessage); msg != "" {
				fmt.Fprintf(b, ": %s", text.Markdown(text.Shorten(msg, 300)))
			}
			var files []string
			for _, f := range []logFile{stderrFile(r), stdoutFile(r)} {
				if f.Path != "" {
					files = append(files, mdFile(f.Path, opts))
				}
			}
			if len(files) > 0 {
				b.WriteString(" (" + strings.Join(files, ", ") + ")")
			}
			b.WriteString("\n")
		}
	}
	if listed < n {
		fmt.Fprintf(b, "\n… and %d more failed trials, up to %d of each kind per candidate listed (every trial is in results.json)\n",
			n-listed, mdMaxFailuresPerKind)
	}
	b.WriteString("\n</details>\n")
}

// mdMaxWrong is how many wrong answers the Markdown report lists.
const mdMaxWrong = 20

// writeWrong lists the trials that ran to their end with a wrong answer:
// what each failed check wanted and got (the first few, then a count).
func writeWrong(b *strings.Builder, cs []candidate) {
	n := 0
	for _, c := range cs {
		n += c.wrong
	}
	if n == 0 {
		return
	}
	fmt.Fprintf(b, "\n<details><summary>%d wrong %s</summary>\n\n", n, text.Plural(n, "answer", "answers"))
	listed := 0
	for _, c := range cs {
		for _, r := range c.results {
			if !r.Wrong() || listed == mdMaxWrong {
				continue
			}
			listed++
			name := runner.TrialName(c.standing.CandidateID, r.TaskID, r.Trial, c.multi)
			fmt.Fprintf(b, "- **%s** — wrong: %s\n", text.Markdown(name), text.Markdown(WrongText(r)))
		}
	}
	if listed < n {
		fmt.Fprintf(b, "\n… and %d more (every trial's checks are in results.json)\n", n-listed)
	}
	b.WriteString("\n</details>\n")
}

// mdFile names a file of the run's directory: a link, else code.
func mdFile(path string, opts Options) string {
	if href := logHref(opts.RunDir, path); href != "" {
		return "[" + text.Markdown(path) + "](" + href + ")"
	}
	return mdCode(path)
}

// mdCode is s on one line as inline code (text.MarkdownCode), "—" when empty.
func mdCode(s string) string {
	s = text.OneLine(s)
	if s == "" {
		return "—"
	}
	return text.MarkdownCode(s)
}

// mdHeader is a column's header as Markdown and HTML show it: "Pass@1".
func mdHeader(h string) string { return h[:1] + strings.ToLower(h[1:]) }

// writeMarkdownMatrix writes a suite's matrix and head-to-head, collapsed.
func writeMarkdownMatrix(b *strings.Builder, rec *record.Record) {
	if len(rec.TaskMatrix) == 0 {
		return
	}
	fmt.Fprintf(b, "\n<details><summary>%d tasks, hardest first (✓ passed, ✗ scored 0, else the task score)</summary>\n\n", len(rec.TaskMatrix))
	header, rows, align := matrixRows(rec, mdMaxTasks)
	mdTable(b, header, mdEscaped(rows), align)
	unscored := 0
	for _, row := range rec.TaskMatrix {
		if row.Unscored {
			unscored++
		}
	}
	if more := len(rec.TaskMatrix) - unscored - len(rows); more > 0 {
		fmt.Fprintf(b, "\n… and %d more tasks (see results.json)\n", more)
	}
	if line := unscoredTasks(rec); line != "" {
		b.WriteString("\n" + text.Markdown(line) + "\n")
	}
	if len(rec.HeadToHead) > 1 {
		b.WriteString("\nTask by task, wins-losses-ties of the row against the column:\n\n")
		header, rows, align := headToHeadRows(rec)
		mdTable(b, header, mdEscaped(rows), align)
	}
	b.WriteString("\n</details>\n")
}

// mdTable writes a Markdown table of cells already escaped (mdEscaped).
func mdTable(b *strings.Builder, header []string, rows [][]string, align []text.Align) {
	heads := make([]string, len(header))
	for i, h := range header {
		heads[i] = text.Markdown(mdHeader(h))
	}
	b.WriteString("| " + strings.Join(heads, " | ") + " |\n" + text.MarkdownRule(align) + "\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
}

// mdEscaped is rows with every cell escaped, in place.
func mdEscaped(rows [][]string) [][]string {
	for _, r := range rows {
		for i := range r {
			r[i] = text.Markdown(r[i])
		}
	}
	return rows
}

// writeMarkdownCost is what each candidate cost, when any did.
func writeMarkdownCost(b *strings.Builder, cs []candidate) {
	if !slices.ContainsFunc(cs, func(c candidate) bool { return c.standing.Cost != nil }) {
		return
	}
	b.WriteString("\n| Candidate | Cost | Per trial | Tokens | Per success | Per solved task |\n|:---|---:|---:|---:|---:|---:|\n")
	for _, c := range cs {
		k := c.standing.Cost
		if k == nil {
			continue
		}
		money := func(p *float64) string {
			switch {
			case k.Unpriced():
				return "unpriced"
			case p == nil:
				return "—"
			}
			return text.USD(*p)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %d | %s | %s |\n", text.Markdown(text.OneLine(c.standing.CandidateID)), totalText(k), money(&k.MeanUSD),
			k.Tokens, money(k.PerSuccessUSD), money(k.PerSolvedUSD))
	}
}
