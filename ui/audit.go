package ui

import (
	"strings"

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

// view renders the audit list in width x height.
func (a auditView) view(width, height int, st styles) string {
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
		lines = append(lines, st.header.Render(cell("TIME", 19)+" "+cell("OPERATOR", 16)+" "+cell("ACTION", 7)+" "+
			cell("RESULT", 13)+" "+cell("KEY", 24)+" REASON"))
		body := max(height-len(lines), 0)
		end := min(a.offset+body, len(a.records))
		for _, r := range a.records[a.offset:end] {
			result := cell(string(r.Result), 13)
			switch r.Result {
			case actions.Released, actions.Extended:
				result = st.connOK.Render(result)
			case actions.Failed:
				result = st.noticeBad.Render(result)
			default:
				result = st.warning.Render(result)
			}
			reason := r.Reason
			if r.Error != "" {
				reason += " error: " + r.Error
			}
			lines = append(lines, r.Time.Local().Format("2006-01-02 15:04:05")+" "+cell(r.Operator, 16)+" "+
				cell(string(r.Action), 7)+" "+result+" "+cell(r.Key, 24)+" "+present.SafeText(reason, 0))
		}
	}
	return fitBlock(strings.Join(lines, "\n"), width, height)
}
