package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// flagUsage finds each flag in cobra's usage lines ("  -y, --yes   ...", "      --ttl duration").
var flagUsage = regexp.MustCompile(`(?m)^\s+(?:-(\w), )?--([\w-]+)`)

// TestEveryCommandAndFlagIsDocumented keeps the docs and the command tree agreeing: every
// command is named in docs/cli.md as `lockscope <command>`, every flag (and its shorthand) in
// the docs of the commands (docs/cli.md, the console's docs/tui.md, the demo's docs/demo.md).
func TestEveryCommandAndFlagIsDocumented(t *testing.T) {
	cliDoc := readDoc(t, "cli.md")
	docs := cliDoc + readDoc(t, "tui.md") + readDoc(t, "demo.md")
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		if cmd.Hidden || cmd.Name() == "help" {
			return
		}
		if cmd.HasParent() && !cmd.Parent().HasParent() && !strings.Contains(cliDoc, "lockscope "+cmd.Name()) {
			t.Errorf("docs/cli.md does not name `lockscope %s`", cmd.Name())
		}
		for _, f := range flagUsage.FindAllStringSubmatch(cmd.LocalFlags().FlagUsages(), -1) {
			shorthand, name := f[1], f[2]
			if name == "help" {
				continue
			}
			if !regexp.MustCompile(`(^|[^\w-])--` + regexp.QuoteMeta(name) + `([^\w-]|$)`).MatchString(docs) {
				t.Errorf("%s: the flag --%s is not documented", cmd.CommandPath(), name)
			}
			if shorthand != "" && !strings.Contains(docs, "`-"+shorthand+"`") {
				t.Errorf("%s: the shorthand -%s of --%s is not documented", cmd.CommandPath(), shorthand, name)
			}
		}
		if cmd.Name() == "completion" { // cobra's own shells: named in the docs together
			return
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	root := newRootCmd(IOStreams{}, func(string) string { return "" })
	root.InitDefaultCompletionCmd()
	walk(root)
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../docs/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
