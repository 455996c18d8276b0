package cli

import (
	"fmt"
	"strings"

	"github.com/lockscope/lockscope/connect"
	"github.com/spf13/cobra"
)

// flagServer picks one of several independent servers (show, release, extend).
const flagServer = "server"

func addServerFlag(cmd *cobra.Command, server *string) {
	cmd.Flags().StringVar(server, flagServer, "", "with --independent: the server the key is on "+
		"(host:port, as ls shows it under SERVER)")
}

// serverTargets are the targets a command about one key reads it on: with --independent,
// each server's own (connect.Target.On), or the --server one only; any other target whole.
func serverTargets(t connect.Target, server string) ([]connect.Target, error) {
	if t.Mode != connect.Independent {
		if server != "" {
			return nil, withExit(exitUsage, fmt.Errorf("--%s picks one of several independent servers: it needs --%s",
				flagServer, flagIndependent))
		}
		return []connect.Target{t}, nil
	}
	if server != "" {
		one, ok := t.On(server)
		if !ok {
			return nil, withExit(exitUsage, fmt.Errorf("--%s %s is not one of the --redis servers (%s)",
				flagServer, server, strings.Join(t.Addrs, ", ")))
		}
		return []connect.Target{one}, nil
	}
	all := make([]connect.Target, len(t.Addrs))
	for i, addr := range t.Addrs {
		all[i], _ = t.On(addr)
	}
	return all, nil
}
