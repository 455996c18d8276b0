package present

import (
	"github.com/lockscope/lockscope/actions"
)

// The audit trail's column titles, in their order (`lockscope audit`, the TUI's audit view):
// what was done and how it ended first, so a narrow screen, which cuts the trailing columns,
// still shows them.
const (
	columnTime     = "TIME"     // when the action was attempted (Time)
	columnAction   = "ACTION"   // release or extend
	columnTTL      = "TTL"      // extend: the TTL asked for; Unknown for a release
	ColumnResult   = "RESULT"   // the outcome, and the error of a failed action
	columnOperator = "OPERATOR" // who acted
	columnReason   = "REASON"   // as the operator gave it, Unknown when none
	columnSeen     = "SEEN"     // the value the operator expected
)

// AuditColumns are the audit table's titles in order; AuditRow's cells follow it.
var AuditColumns = []string{columnTime, columnAction, columnTTL, ColumnResult, ColumnKey, columnOperator, columnReason, columnSeen}

// auditErrorMax is how much of a failed action's error the RESULT cell keeps.
const auditErrorMax = 60

// AuditRow is record r's cells under AuditColumns, as read (escape them where they are
// printed). redact removes the target's passwords from the error (connect.Target.Redact).
func AuditRow(r actions.AuditRecord, redact func(string) string) []string {
	ttl := Unknown
	if r.Action.Extends() {
		ttl = Duration(r.TTL)
	}
	result := string(r.Result)
	if r.Error != "" {
		result += ": " + clip(redact(r.Error), auditErrorMax)
	}
	return []string{Time(r.Time), string(r.Action), ttl, result, r.Key, r.Operator, OrUnknown(r.Reason), r.Seen}
}
