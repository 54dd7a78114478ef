// Command forge runs a tournament between candidate programs and picks the
// best. See README.md.
package main

import (
	"os"

	"github.com/forge-run/forge/cli"
)

func main() {
	os.Exit(cli.Main())
}
