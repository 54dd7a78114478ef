// Command launch is the least a Go program does to run jobs: it starts
// "bash SCRIPT bench OUT" for each of N jobs with os/exec, C at a time, and
// waits for each. bench/local.sh measures its CPU beside forge's: the cost
// of starting a process from Go on that machine, under which forge cannot go.
//
//	launch N C SCRIPT OUTDIR
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
)

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: launch N C SCRIPT OUTDIR")
		os.Exit(2)
	}
	n, err1 := strconv.Atoi(os.Args[1])
	c, err2 := strconv.Atoi(os.Args[2])
	if err1 != nil || err2 != nil || n < 0 || c < 1 {
		fmt.Fprintln(os.Stderr, "launch: N and C must be numbers, C at least 1")
		os.Exit(2)
	}
	slots := make(chan struct{}, c)
	var wg sync.WaitGroup
	failed := make(chan error, n)
	for i := range n {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			out := filepath.Join(os.Args[4], strconv.Itoa(i)+".md")
			if err := exec.Command("bash", os.Args[3], "bench", out).Run(); err != nil {
				failed <- err
			}
		})
	}
	wg.Wait()
	close(failed)
	for err := range failed {
		fmt.Fprintln(os.Stderr, "launch:", err)
		os.Exit(1)
	}
}
