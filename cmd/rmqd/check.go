package main

import (
	"flag"
	"fmt"
	"io"

	"rmqd/store"
)

const checkUsage = `Usage: rmqd check [-repair] STORE_DIR

Checks a store directory offline (stop the broker first): commitlog records,
consume queues, index files, checkpoint and config JSON. Prints one line per
problem and exits 1 when there is any. -repair cuts torn tails as recovery
would (the last commitlog file's bad end, consume-queue units and index files
past the commitlog's end) and nothing else, then checks again.
`

// runCheck is `rmqd check`: exit 0 clean, 1 problems left, 2 usage.
func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rmqd check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, checkUsage) }
	repair := fs.Bool("repair", false, "cut torn tails as recovery would")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	dir := fs.Arg(0)
	probs := store.Check(dir)
	if *repair && len(probs) > 0 {
		done, err := store.Repair(dir, probs)
		for _, p := range done {
			fmt.Fprintf(stdout, "repaired: %s\n", p)
		}
		if err != nil {
			fmt.Fprintf(stderr, "rmqd check: %v\n", err)
			return 1
		}
		probs = store.Check(dir)
	}
	for _, p := range probs {
		fmt.Fprintln(stdout, p)
	}
	if len(probs) > 0 {
		return 1
	}
	return 0
}
