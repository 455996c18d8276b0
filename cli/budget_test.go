package cli

import (
	"strings"
	"testing"
)

// TestScanBudgetFlag: --scan-budget takes a percentage or a fraction in (0, 100 %]; anything
// else is a usage error (exit 2) that says what it wants.
func TestScanBudgetFlag(t *testing.T) {
	for text, want := range map[string]float64{"2%": 0.02, "0.5%": 0.005, "0.02": 0.02, "100%": 1, " 10% ": 0.1, "1": 1} {
		var b budgetValue
		if err := b.Set(text); err != nil || float64(b) != want {
			t.Errorf("Set(%q) = %v, %v; want %v", text, float64(b), err, want)
		}
	}
	var b budgetValue = 0.005
	if got := b.String(); got != "0.5%" {
		t.Errorf("String() = %q, want 0.5%%", got)
	}
	for _, bad := range []string{"0", "0%", "-1%", "101%", "2", "abc", "NaN", ""} {
		for _, cmd := range [][]string{{"tui"}, {}} {
			r := runCLI(t, cliOpts{}, append(cmd, "--scan-budget", bad)...)
			expectExit(t, r, exitUsage)
			if !strings.Contains(r.stderr, "--scan-budget") {
				t.Errorf("%v --scan-budget %q: %q does not name the flag", cmd, bad, r.stderr)
			}
		}
	}
}
