package docs

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockscope/lockscope/internal/promtest"
)

// alertRules is the alert rules example; its unit tests are alertRulesTest, beside it.
var (
	alertRules     = filepath.Join(moduleRoot, "docs", "prometheus", "lockscope-alerts.yml")
	alertRulesTest = filepath.Join(moduleRoot, "docs", "prometheus", "lockscope-alerts.test.yml")
)

// The alert rules pass promtool's checks (syntax, PromQL, templates) and its unit tests: each
// alert fires on the series that should raise it, after its `for`, and not on the others.
func TestAlertRules(t *testing.T) {
	out, err := promtest.Promtool(t, nil, "check", "rules", alertRules)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool check rules: no SUCCESS in\n%s", out)
	}
	out, err = promtest.Promtool(t, nil, "test", "rules", alertRulesTest)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool test rules: no SUCCESS in\n%s", out)
	}
}
