// Command lockscope inspects and administers Redis distributed locks: a TUI, a CLI and a demo.
package main

import (
	"os"

	"github.com/lockscope/lockscope/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:]))
}
