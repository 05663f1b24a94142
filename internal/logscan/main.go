package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/fiomig/fiomig/fio"
	"github.com/fiomig/fiomig/internal/synthlog"
)

func main() {
	generate := flag.Int("generate", 0, "write this many synthetic log lines to the file instead of reading it")
	columns := flag.Int("columns", 6, "columns of generated lines: 4, 5 or 6")
	seed := flag.Uint64("seed", 1, "seed of the generated stream")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: logscan [-generate N [-columns C] [-seed S]] FILE")
		os.Exit(2)
	}
	path := flag.Arg(0)
	if *generate > 0 {
		f, err := os.Create(path)
		if err == nil {
			err = synthlog.Write(f, *generate, *columns, *seed)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	ga, err := fio.AnalyzeLogFile(path, fio.GapOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("completions %d, longest gap %.3f s at [%d, %d] ms, zero seconds %d\n",
		ga.Completions, ga.LongestGap.Seconds(), ga.LongestGap.StartMs, ga.LongestGap.EndMs, ga.ZeroSeconds)
}
