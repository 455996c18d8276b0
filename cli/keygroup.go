package cli

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/lockscope/lockscope/keygroup"
)

// --group is the rule that puts lock keys in groups (package keygroup): the exporter's group
// label and the console's contention overview take it alike.
const flagGroup = "group"

// addGroupFlag registers --group on f, its text into spec; what says what the groups are for.
func addGroupFlag(f *pflag.FlagSet, spec *string, what string) {
	f.StringVar(spec, flagGroup, keygroup.Default.String(), "key group rule of "+what+": segment:N (the Nth ':'-separated part),\n"+
		"prefix:P1,P2,... (the longest listed prefix) or regex:RE (its first capture group)")
}

// groupRule reads --group's text (a usage error when it is no rule).
func groupRule(spec string) (keygroup.Rule, error) {
	rule, err := keygroup.Parse(spec)
	if err != nil {
		return keygroup.Rule{}, withExit(exitUsage, fmt.Errorf("--%s: %w", flagGroup, err))
	}
	return rule, nil
}
