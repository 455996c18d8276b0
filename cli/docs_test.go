package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

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
		cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			if !regexp.MustCompile(`(^|[^\w-])--` + regexp.QuoteMeta(f.Name) + `([^\w-]|$)`).MatchString(docs) {
				t.Errorf("%s: the flag --%s is not documented", cmd.CommandPath(), f.Name)
			}
			if f.Shorthand != "" && !strings.Contains(docs, "`-"+f.Shorthand+"`") {
				t.Errorf("%s: the shorthand -%s of --%s is not documented", cmd.CommandPath(), f.Shorthand, f.Name)
			}
		})
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
