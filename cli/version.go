package cli

import (
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X github.com/lockscope/lockscope/cli.version=..."; otherwise the module version.
var version = ""

// versionOptions is `lockscope version`.
type versionOptions struct {
	IO IOStreams
}

func newVersionCmd(ios IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the lockscope version",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			return runVersion(&versionOptions{IO: ios})
		},
	}
}

func runVersion(opts *versionOptions) error {
	err := printf(opts.IO.Out, "lockscope %s\n", buildVersion())
	return err
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}
