package ui

import (
	"slices"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/present"
)

// auditView is the `a` screen: the newest records of the audit trail (lockscope:audit), newest
// first, loaded by a command each time it opens.
type auditView struct {
	open    bool
	loadID  uint64 // the load whose result is awaited; older results are dropped
	loading bool
	records []actions.AuditRecord
	err     string
	offset  int
}

func (a *auditView) scroll(n, height int) {
	a.offset = min(max(a.offset+n, 0), max(len(a.records)-height, 0))
}

// auditWidths are the widest the audit columns (present.AuditColumns) get but the last, which
// takes the rest of the line; a narrow screen cuts the trailing columns.
var auditWidths = []int{24, 7, 8, 72, 32, 16, 24}

// view renders the audit list in width x height; redact removes the target's passwords from
// the errors recorded.
func (a auditView) view(width, height int, redact func(string) string, st styles) string {
	lines := []string{st.paneTitle.Render("Audit trail") + st.dim.Render("  newest first · a/esc close · r reload")}
	switch {
	case a.loading:
		lines = append(lines, st.dim.Render("loading…"))
	case a.err != "" && len(a.records) == 0:
		lines = append(lines, st.noticeBad.Render("cannot read the audit trail: "+present.SafeText(a.err, 0)))
	case len(a.records) == 0:
		lines = append(lines, st.dim.Render("no admin actions recorded yet"))
	default:
		if a.err != "" {
			lines = append(lines, st.warning.Render("partial: "+present.SafeText(a.err, 0)))
		}
		body := max(height-len(lines)-1, 0)
		end := min(a.offset+body, len(a.records))
		rows := [][]string{present.AuditColumns}
		for _, r := range a.records[a.offset:end] {
			rows = append(rows, present.AuditRow(r, redact))
		}
		widths := auditColumnWidths(rows)
		lines = append(lines, st.header.Render(strings.Join(auditCells(rows[0], widths), " ")))
		for i, r := range a.records[a.offset:end] {
			result := st.warning
			switch r.Result {
			case actions.Released, actions.Extended:
				result = st.connOK
			case actions.Failed:
				result = st.noticeBad
			}
			cells := auditCells(rows[i+1], widths)
			cells[auditResult] = result.Render(cells[auditResult])
			lines = append(lines, strings.Join(cells, " "))
		}
	}
	return fitBlock(strings.Join(lines, "\n"), width, height)
}

// auditResult is the index of the RESULT column, styled by the outcome.
var auditResult = slices.Index(present.AuditColumns, present.ColumnResult)

// auditColumnWidths are the widths of the rows' columns shown: their widest cell, at most
// auditWidths.
func auditColumnWidths(rows [][]string) []int {
	widths := make([]int, len(auditWidths))
	for _, row := range rows {
		for i := range widths {
			widths[i] = min(max(widths[i], lipgloss.Width(present.SafeText(row[i], 0))), auditWidths[i])
		}
	}
	return widths
}

// auditCells lays cells out in widths, each escaped (by cell); the last takes the rest.
func auditCells(cells []string, widths []int) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		if i < len(widths) {
			out[i] = cell(c, widths[i])
		} else {
			out[i] = present.SafeText(c, 0)
		}
	}
	return out
}
