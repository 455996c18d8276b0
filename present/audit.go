package present

import (
	"github.com/lockscope/lockscope/actions"
)

// The audit trail's column titles, in their order (`lockscope audit`, the TUI's audit view).
const (
	columnTime     = "TIME"     // when the action was attempted (Time)
	columnOperator = "OPERATOR" // who acted
	columnAction   = "ACTION"   // release, or extend and the TTL asked for
	ColumnResult   = "RESULT"   // the outcome, and the error of a failed action
	columnReason   = "REASON"   // as the operator gave it, Unknown when none
	columnSeen     = "SEEN"     // the value the operator expected
)

// AuditColumns are the audit table's titles in order; AuditRow's cells follow it.
var AuditColumns = []string{columnTime, columnOperator, columnAction, ColumnKey, ColumnResult, columnReason, columnSeen}

// auditErrorMax is how much of a failed action's error the RESULT cell keeps.
const auditErrorMax = 60

// AuditRow is record r's cells under AuditColumns, as read (escape them where they are
// printed). redact removes the target's passwords from the error (connect.Target.Redact).
func AuditRow(r actions.AuditRecord, redact func(string) string) []string {
	action := string(r.Action)
	if r.Action == actions.ActionExtend {
		action += " " + Duration(r.TTL)
	}
	result := string(r.Result)
	if r.Error != "" {
		result += ": " + clip(redact(r.Error), auditErrorMax)
	}
	return []string{Time(r.Time), r.Operator, action, r.Key, result, OrUnknown(r.Reason), r.Seen}
}
